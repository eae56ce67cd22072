// Tiny "--name=value" / "--name value" argument reader shared by the examples: --help prints the usage
// and exits 0; bad input prints a one-line reason and exits 2.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace lockstep::examples {

struct Option {
  std::string name;
  std::string value;  // the default until the command line overrides it
  std::string help;
};

class Args {
 public:
  // `summary` is one line on what the program shows; options keep the order given (the usage's order).
  Args(int argc, char** argv, std::string summary, std::vector<Option> options)
      : prog_(argc > 0 ? argv[0] : "example"), summary_(std::move(summary)), options_(std::move(options)) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--help" || a == "-h") help();
      if (a.rfind("--", 0) != 0) usage("unexpected argument '" + a + "'");
      std::string key = a.substr(2);
      const size_t eq = key.find('=');
      if (eq != std::string::npos) key = key.substr(0, eq);
      Option* o = find(key);
      if (!o) usage("unknown option --" + key);
      if (eq != std::string::npos) {
        o->value = a.substr(2 + eq + 1);
      } else if (i + 1 < argc) {
        o->value = argv[++i];
      } else {
        usage("--" + key + " needs a value");
      }
    }
  }
  const std::string& str(const std::string& k) const {
    for (const Option& o : options_) {
      if (o.name == k) return o.value;
    }
    usage("no option --" + k);  // a typo in the example itself
  }
  int num(const std::string& k) const {
    const std::string& v = str(k);
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end) usage("--" + k + " wants an integer, not '" + v + "'");
    return static_cast<int>(n);
  }
  // Bad input: one line naming the problem (and where --help is), exit status 2.
  [[noreturn]] void usage(const std::string& why) const {
    std::fprintf(stderr, "%s: %s (see --help)\n", prog_.c_str(), why.c_str());
    std::exit(2);
  }

 private:
  Option* find(const std::string& k) {
    for (Option& o : options_) {
      if (o.name == k) return &o;
    }
    return nullptr;
  }
  [[noreturn]] void help() const {
    std::printf("usage: mpirun -np N %s [--option=value]...\n%s\n\noptions:\n", prog_.c_str(),
                summary_.c_str());
    for (const Option& o : options_) {
      std::printf("  --%-16s %s (default %s)\n", o.name.c_str(), o.help.c_str(), o.value.c_str());
    }
    std::printf("  --%-16s print this help and exit\n", "help");
    std::exit(0);
  }

  std::string prog_;
  std::string summary_;
  std::vector<Option> options_;
};

}  // namespace lockstep::examples
