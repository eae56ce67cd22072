// Tiny "--name=value" / "--name value" argument reader shared by the examples (bad input: exit 2).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace lockstep::examples {

class Args {
 public:
  Args(int argc, char** argv, std::map<std::string, std::string> defaults) : values_(std::move(defaults)) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a.rfind("--", 0) != 0) usage(argv[0], "unexpected argument '" + a + "'");
      std::string key = a.substr(2), value;
      const size_t eq = key.find('=');
      if (eq != std::string::npos) {
        value = key.substr(eq + 1);
        key = key.substr(0, eq);
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        usage(argv[0], "--" + key + " needs a value");
      }
      if (!values_.count(key)) usage(argv[0], "unknown option --" + key);
      values_[key] = value;
    }
  }
  const std::string& str(const std::string& k) const { return values_.at(k); }
  int num(const std::string& k) const {
    char* end = nullptr;
    const long v = std::strtol(values_.at(k).c_str(), &end, 10);
    if (!*values_.at(k).c_str() || *end) usage("", "--" + k + " wants an integer, not '" + values_.at(k) + "'");
    return static_cast<int>(v);
  }
  [[noreturn]] void usage(const std::string& prog, const std::string& why) const {
    std::fprintf(stderr, "%s: %s; options:", prog.empty() ? "example" : prog.c_str(), why.c_str());
    for (const auto& [k, v] : values_) std::fprintf(stderr, " --%s=%s", k.c_str(), v.c_str());
    std::fprintf(stderr, "\n");
    std::exit(2);
  }

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace lockstep::examples
