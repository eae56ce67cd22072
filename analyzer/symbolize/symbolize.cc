// Call-site symbolization through an external symbolizer in batch mode: requests go in through a
// memory file and answers come back through a pipe, so a large batch can never deadlock on full pipes.
#include "symbolize/symbolize.h"

#include <elf.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

extern char** environ;

namespace lockstep::symbolize {
namespace {

bool executable(const std::string& p) { return !p.empty() && access(p.c_str(), X_OK) == 0; }

std::string find_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return executable(name) ? name : "";
  const char* path = getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':'))
    if (executable(dir + "/" + name)) return dir + "/" + name;
  return "";
}

std::string hex(uint64_t v) {
  char b[32];
  snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// "file:line:col" or "file:line" (the file may itself contain ':'); "??:0" means unknown.
void parse_file_line(const std::string& s, Location& loc) {
  std::string rest = s;
  std::vector<uint32_t> nums;
  for (int i = 0; i < 2; ++i) {
    size_t c = rest.rfind(':');
    if (c == std::string::npos) break;
    std::string tail = rest.substr(c + 1);
    size_t sp = tail.find(' ');  // addr2line: "file:12 (discriminator 3)"
    if (sp != std::string::npos) tail = tail.substr(0, sp);
    if (tail.empty() || tail.find_first_not_of("0123456789") != std::string::npos) break;
    nums.insert(nums.begin(), uint32_t(strtoul(tail.c_str(), nullptr, 10)));
    rest = rest.substr(0, c);
  }
  if (nums.empty() || rest == "??" || rest.empty()) return;
  loc.file = rest;
  loc.line = nums[0];
  loc.column = nums.size() > 1 ? nums[1] : 0;
}

// Runs `argv` with `input` on stdin and returns its stdout; false if it could not run.
bool run_capture(const std::vector<std::string>& argv, const std::string& input, std::string* out) {
  int in = memfd_create("lockstep-symbolize", MFD_CLOEXEC);
  if (in < 0) return false;
  if (write(in, input.data(), input.size()) != ssize_t(input.size()) || lseek(in, 0, SEEK_SET) != 0) {
    close(in);
    return false;
  }
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    close(in);
    return false;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in, 0);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in);
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    return false;
  }
  char buf[65536];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) out->append(buf, size_t(n));
  close(pipefd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  std::stringstream ss(s);
  std::string l;
  while (std::getline(ss, l)) lines.push_back(l);
  return lines;
}

}  // namespace

std::string Location::site(bool basename) const {
  if (has_line()) {
    std::string f = file;
    if (basename) {
      size_t s = f.rfind('/');
      if (s != std::string::npos) f = f.substr(s + 1);
    }
    std::string text = f + ":" + std::to_string(line);
    if (python && !function.empty()) text += " in " + function + "()";
    return text;
  }
  if (!module.empty()) {
    std::string m = module;
    size_t s = m.rfind('/');
    if (s != std::string::npos) m = m.substr(s + 1);
    return m + "+" + hex(offset);
  }
  return offset ? hex(offset) : "";
}

std::string read_build_id(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "";
  Elf64_Ehdr eh;
  if (!f.read(reinterpret_cast<char*>(&eh), sizeof eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256)
    return "";
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  f.seekg(std::streamoff(eh.e_phoff));
  if (!f.read(reinterpret_cast<char*>(ph.data()), std::streamsize(ph.size() * sizeof(Elf64_Phdr)))) return "";
  for (const auto& p : ph) {
    if (p.p_type != PT_NOTE || p.p_filesz > (1u << 20)) continue;
    std::string notes(p.p_filesz, '\0');
    f.clear();
    f.seekg(std::streamoff(p.p_offset));
    if (!f.read(notes.data(), std::streamsize(notes.size()))) continue;
    size_t at = 0;
    while (at + sizeof(Elf64_Nhdr) <= notes.size()) {
      Elf64_Nhdr nh;
      memcpy(&nh, notes.data() + at, sizeof nh);
      size_t name_sz = (nh.n_namesz + 3) & ~3u, desc_sz = (nh.n_descsz + 3) & ~3u;
      size_t total = sizeof nh + name_sz + desc_sz;
      if (total > notes.size() - at) break;
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
          memcmp(notes.data() + at + sizeof nh, "GNU", 4) == 0) {
        static const char* digits = "0123456789abcdef";
        std::string out;
        const auto* d = reinterpret_cast<const unsigned char*>(notes.data() + at + sizeof nh + name_sz);
        for (uint32_t i = 0; i < nh.n_descsz; ++i) {
          out += digits[d[i] >> 4];
          out += digits[d[i] & 15];
        }
        return out;
      }
      at += total;
    }
  }
  return "";
}

Symbolizer::Symbolizer(const Options& options) : check_build_id_(options.check_build_id) {
  std::vector<std::string> candidates;
  if (!options.tool.empty()) {
    candidates.push_back(options.tool);
  } else {
    if (const char* env = getenv("LOCKSTEP_SYMBOLIZER"); env && *env) candidates.push_back(env);
    candidates.insert(candidates.end(), {"llvm-symbolizer-19", "/usr/lib/llvm-19/bin/llvm-symbolizer",
                                         "llvm-symbolizer", "addr2line"});
  }
  for (const auto& c : candidates) {
    std::string p = find_in_path(c);
    if (!p.empty()) {
      tool_ = p;
      break;
    }
  }
  addr2line_ = tool_.size() >= 9 && tool_.find("addr2line") != std::string::npos;
}

void Symbolizer::run_tool(const std::vector<std::pair<std::string, uint64_t>>& queries) {
  if (tool_.empty() || queries.empty()) return;
  auto store = [&](const std::pair<std::string, uint64_t>& q, const std::string& fn, const std::string& fl) {
    Location& loc = cache_[q];
    if (fn != "??" && !fn.empty()) loc.function = fn;
    parse_file_line(fl, loc);
  };
  if (addr2line_) {
    // addr2line reads one object per process: one run per module.
    std::map<std::string, std::vector<uint64_t>> by_module;
    for (const auto& q : queries) by_module[q.first].push_back(q.second);
    for (const auto& [mod, offs] : by_module) {
      std::string input, out;
      for (uint64_t o : offs) input += hex(o) + "\n";
      ++runs_;
      if (!run_capture({tool_, "-f", "-C", "-e", mod}, input, &out)) continue;
      std::vector<std::string> lines = split_lines(out);
      for (size_t i = 0; i < offs.size() && 2 * i + 1 < lines.size(); ++i)
        store({mod, offs[i]}, lines[2 * i], lines[2 * i + 1]);
    }
    return;
  }
  // llvm-symbolizer: one process for the whole set; each answer is a block ended by an empty line
  // (several frame pairs when inlined: the first is the innermost, the line the call is written on).
  std::string input, out;
  for (const auto& q : queries) input += "\"" + q.first + "\" " + hex(q.second) + "\n";
  ++runs_;
  if (!run_capture({tool_, "--demangle", "--functions=linkage", "--inlines"}, input, &out) && out.empty())
    return;
  std::vector<std::string> lines = split_lines(out);
  size_t q = 0, i = 0;
  while (q < queries.size() && i < lines.size()) {
    if (lines[i].empty()) {
      ++i;
      continue;
    }
    const std::string& fn = lines[i];
    const std::string fl = i + 1 < lines.size() ? lines[i + 1] : "";
    store(queries[q], fn, fl);
    while (i < lines.size() && !lines[i].empty()) ++i;  // skip outer inline frames
    ++q;
  }
}

std::vector<Location> Symbolizer::call_sites(const std::vector<format::Module>& modules,
                                             const std::vector<uint64_t>& return_addresses) {
  std::vector<std::pair<std::string, uint64_t>> keys(return_addresses.size());
  std::vector<std::pair<std::string, uint64_t>> unresolved;
  std::set<std::pair<std::string, uint64_t>> queued;
  std::vector<std::string> problems(return_addresses.size());
  std::map<std::string, bool> regular;
  for (size_t i = 0; i < return_addresses.size(); ++i) {
    const uint64_t ra = return_addresses[i];
    if (ra == 0) continue;
    const uint64_t addr = ra - 1;
    const format::Module* mod = nullptr;
    for (const auto& m : modules)
      if (addr >= m.lo && addr < m.hi) mod = &m;
    if (!mod) {
      keys[i] = {"", addr};
      continue;
    }
    // PIE executables and shared objects: file addresses are run-time addresses minus the load base.
    keys[i] = {mod->path, addr - mod->base};
    if (mod->lo >= LST_PY_ADDR_BASE) {
      // A Python function (format 1.2): the offset is the line; the trace itself names file and function.
      Location& loc = cache_[keys[i]];
      loc.module = mod->path;
      loc.offset = keys[i].second;
      loc.file = mod->path;
      loc.line = uint32_t(keys[i].second);
      loc.python = true;
      if (!mod->function.empty()) loc.function = mod->function;
      continue;
    }
    // A path from a damaged or hostile trace may name a FIFO or a device: reading it would block.
    auto reg = regular.find(mod->path);
    if (reg == regular.end()) {
      struct stat st;
      reg = regular.emplace(mod->path, stat(mod->path.c_str(), &st) == 0 && S_ISREG(st.st_mode)).first;
    }
    if (!reg->second) {
      problems[i] = "module is missing or not a regular file";
      continue;
    }
    if (check_build_id_ && !mod->build_id.empty()) {
      auto key = mod->path + "\n" + mod->build_id;
      auto it = build_id_ok_.find(key);
      if (it == build_id_ok_.end())
        it = build_id_ok_.emplace(key, read_build_id(mod->path) == mod->build_id).first;
      if (!it->second) {
        problems[i] = "module changed or missing since the trace was written";
        continue;
      }
    }
    if (!cache_.count(keys[i]) && queued.insert(keys[i]).second) unresolved.push_back(keys[i]);
  }
  for (const auto& k : unresolved) cache_[k].module = k.first, cache_[k].offset = k.second;
  run_tool(unresolved);
  std::vector<Location> out(return_addresses.size());
  for (size_t i = 0; i < return_addresses.size(); ++i) {
    if (return_addresses[i] == 0) continue;
    auto it = cache_.find(keys[i]);
    if (it != cache_.end() && problems[i].empty()) {
      out[i] = it->second;
    } else {
      out[i].module = keys[i].first;
      out[i].offset = keys[i].second;
      out[i].problem =
          problems[i].empty() ? (keys[i].first.empty() ? "address in no known module" : "") : problems[i];
    }
  }
  return out;
}

Location Symbolizer::call_site(const std::vector<format::Module>& modules, uint64_t return_address) {
  return call_sites(modules, {return_address})[0];
}

}  // namespace lockstep::symbolize
