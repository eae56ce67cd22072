// `lockstep lint`: runs the collective-consistency analysis over C, C++ and CUDA sources the way clang
// tools do (compile_commands.json, or flags after `--`), one translation unit per worker thread.
#include <clang/Basic/Diagnostic.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Tooling/ArgumentsAdjusters.h>
#include <clang/Tooling/CompilationDatabase.h>
#include <clang/Tooling/JSONCompilationDatabase.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/CrashRecoveryContext.h>
#include <llvm/Support/StringSaver.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#include "cli/command.h"
#include "cli/output.h"
#include "lint/analysis.h"
#include "lint/catalog.h"
#include "lint/finding.h"
#include "lockstep/version.h"

namespace lockstep::lint {
namespace {

namespace fs = std::filesystem;
using namespace clang;
using namespace clang::tooling;

// Force-included into every .cu file. Clang defines __CUDACC__ empty; NCCL 2.2x headers test it with
// `#if __CUDACC__`, as nvcc's 1 allows. Clang 19's CUDA headers define __ldg but none of the other
// cache-hinted loads and stores of sm_32_intrinsics.h (which its wrapper skips), and CUDA 12+ device
// code calls them (NCCL 2.28's gin_proxy.h: __stwt): device-side stand-ins with the same effect let
// that code parse; lint never compiles device code.
constexpr const char* kCudaHostShim = R"(#undef __CUDACC__
#define __CUDACC__ 1
#if defined(__clang__) && __clang_major__ <= 19
#define LOCKSTEP_CACHE_HINT_LOAD(name) \
  template <typename T> __attribute__((device)) inline T name(const T* p) { return *p; }
#define LOCKSTEP_CACHE_HINT_STORE(name) \
  template <typename T> __attribute__((device)) inline void name(T* p, T v) { *p = v; }
LOCKSTEP_CACHE_HINT_LOAD(__ldcg)
LOCKSTEP_CACHE_HINT_LOAD(__ldca)
LOCKSTEP_CACHE_HINT_LOAD(__ldcs)
LOCKSTEP_CACHE_HINT_LOAD(__ldlu)
LOCKSTEP_CACHE_HINT_LOAD(__ldcv)
LOCKSTEP_CACHE_HINT_STORE(__stwb)
LOCKSTEP_CACHE_HINT_STORE(__stcg)
LOCKSTEP_CACHE_HINT_STORE(__stcs)
LOCKSTEP_CACHE_HINT_STORE(__stwt)
#undef LOCKSTEP_CACHE_HINT_LOAD
#undef LOCKSTEP_CACHE_HINT_STORE
#endif
)";

// Clang 19's CUDA wrapper includes two texture headers that CUDA 13 no longer ships; empty ones let the
// host side parse. They live in a per-user temporary directory created on first use.
std::string cuda_shim_dir() {
  static const std::string dir = [] {
    std::error_code ec;
    auto d = fs::temp_directory_path(ec) / ("lockstep-lint-cuda-shim-" + std::to_string(getuid()));
    fs::create_directories(d, ec);
    for (const char* name : {"texture_fetch_functions.h", "texture_indirect_functions.h"})
      if (!fs::exists(d / name)) std::ofstream(d / name) << "/* intentionally empty: see lockstep lint */\n";
    // Rewritten when its text changed, so that a newer lockstep never reads an older shim.
    std::string text = kCudaHostShim;
    std::ifstream in(d / "lockstep_cuda_host.h");
    std::string have((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (have != text) {
      // Per process first, then renamed: workers of another lockstep never see half a file.
      auto tmp = d / ("lockstep_cuda_host.h." + std::to_string(getpid()));
      std::ofstream(tmp) << text;
      fs::rename(tmp, d / "lockstep_cuda_host.h", ec);
    }
    return d.string();
  }();
  return dir;
}

struct Options {
  std::string build_dir;
  std::vector<std::string> files;
  std::vector<std::string> extra_args;  // after `--`
  bool have_fixed_args = false;
  unsigned jobs = 0;
  std::vector<std::string> rules;
  std::string format = "text";
  std::string output;
  std::vector<std::string> assume_local;  // argv, env
  std::vector<std::string> enable;        // rules off by default
};

bool is_cuda(const std::string& file) { return fs::path(file).extension() == ".cu"; }
bool is_c(const std::string& file) { return fs::path(file).extension() == ".c"; }

std::string cuda_root() {
  if (const char* env = std::getenv("CUDA_HOME"); env && fs::exists(fs::path(env) / "include")) return env;
  if (fs::exists("/usr/local/cuda/include")) return "/usr/local/cuda";
  return {};
}

bool is_nvcc(const std::string& compiler) {
  std::string base = fs::path(compiler).filename().string();
  return base == "nvcc" || base == "nvcc.exe";
}

// An nvcc command line (as CMake writes it into compile_commands.json) in the Clang driver's terms: the
// host side of a CUDA compilation. Include directories, macros and the language standard are kept,
// also from `--options-file` response files and `-Xcompiler` lists; device code generation, host
// compiler selection and nvcc-only switches are dropped, because lint never compiles device code.
std::vector<std::string> translate_nvcc(const std::vector<std::string>& in, const std::string& directory) {
  // nvcc flags that take a separate value which is dropped with them.
  static const std::set<std::string> kDropWithValue = {"-gencode",
                                                       "--generate-code",
                                                       "-arch",
                                                       "--gpu-architecture",
                                                       "-code",
                                                       "--gpu-code",
                                                       "-ccbin",
                                                       "--compiler-bindir",
                                                       "-Xcudafe",
                                                       "-Xptxas",
                                                       "-Xnvlink",
                                                       "-Xfatbin",
                                                       "-Xarchive",
                                                       "--threads",
                                                       "-t",
                                                       "-diag-suppress",
                                                       "--diag-suppress",
                                                       "--Werror",
                                                       "-maxrregcount",
                                                       "--maxrregcount",
                                                       "-rdc",
                                                       "--relocatable-device-code",
                                                       "--default-stream",
                                                       "-default-stream",
                                                       "--split-compile",
                                                       "-split-compile"};
  static const std::set<std::string> kDrop = {"-forward-unknown-to-host-compiler",
                                              "--forward-unknown-to-host-compiler",
                                              "--expt-relaxed-constexpr",
                                              "-expt-relaxed-constexpr",
                                              "--expt-extended-lambda",
                                              "-expt-extended-lambda",
                                              "--extended-lambda",
                                              "-extended-lambda",
                                              "-dc",
                                              "--device-c",
                                              "-dw",
                                              "--device-w",
                                              "-lineinfo",
                                              "--generate-line-info",
                                              "-use_fast_math",
                                              "--use_fast_math",
                                              "-G",
                                              "--device-debug",
                                              "--keep",
                                              "-keep",
                                              "--resource-usage",
                                              "-res-usage",
                                              "--display-error-number",
                                              "-Wno-deprecated-gpu-targets",
                                              "--cudart",
                                              "-cudart"};
  // Prefixes of `--flag=value` spellings to drop.
  static const char* kDropPrefix[] = {"-gencode=",
                                      "--generate-code=",
                                      "-arch=",
                                      "--gpu-architecture=",
                                      "-code=",
                                      "--gpu-code=",
                                      "-ccbin=",
                                      "--compiler-bindir=",
                                      "-Xcudafe=",
                                      "-Xptxas=",
                                      "-Xnvlink=",
                                      "--threads=",
                                      "-t=",
                                      "--diag-suppress=",
                                      "-diag-suppress=",
                                      "--Werror=",
                                      "-maxrregcount=",
                                      "--maxrregcount=",
                                      "-rdc=",
                                      "--relocatable-device-code=",
                                      "--default-stream=",
                                      "-default-stream=",
                                      "--cudart=",
                                      "-cudart=",
                                      "--split-compile=",
                                      "-split-compile="};
  std::vector<std::string> out{"clang++"};
  std::vector<std::string> work(in.begin() + (in.empty() ? 0 : 1), in.end());
  auto host_flags = [&](const std::string& list) {
    // -Xcompiler takes the host compiler's flags, comma-separated: keep what changes the parse only.
    llvm::SmallVector<llvm::StringRef, 8> parts;
    llvm::StringRef(list).split(parts, ',', -1, false);
    for (llvm::StringRef p : parts) {
      if (p.starts_with("-D") || p.starts_with("-U") || p.starts_with("-I") || p.starts_with("-std=") ||
          p.starts_with("-isystem") || p == "-fopenmp" || p == "-pthread")
        out.push_back(p.str());
    }
  };
  for (size_t i = 0; i < work.size(); ++i) {
    const std::string a = work[i];
    auto next = [&]() -> std::string { return i + 1 < work.size() ? work[++i] : std::string(); };
    if (a == "--options-file" || a == "-optf" || a.rfind("--options-file=", 0) == 0 ||
        a.rfind("-optf=", 0) == 0) {
      std::string file = a.find('=') != std::string::npos ? a.substr(a.find('=') + 1) : next();
      fs::path path = fs::path(file).is_absolute() ? fs::path(file) : fs::path(directory) / file;
      std::ifstream f(path);
      std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      llvm::BumpPtrAllocator alloc;
      llvm::StringSaver saver(alloc);
      llvm::SmallVector<const char*, 32> tokens;
      llvm::cl::TokenizeGNUCommandLine(text, saver, tokens);
      work.insert(work.begin() + static_cast<long>(i) + 1, tokens.begin(), tokens.end());
      continue;
    }
    if (a == "-Xcompiler" || a == "--compiler-options") {
      host_flags(next());
      continue;
    }
    if (a.rfind("-Xcompiler=", 0) == 0 || a.rfind("--compiler-options=", 0) == 0) {
      host_flags(a.substr(a.find('=') + 1));
      continue;
    }
    if (kDrop.count(a)) continue;
    if (kDropWithValue.count(a)) {
      next();
      continue;
    }
    if (std::any_of(std::begin(kDropPrefix), std::end(kDropPrefix),
                    [&](const char* p) { return a.rfind(p, 0) == 0; }))
      continue;
    if (a == "-x" || a == "--x") {
      std::string lang = next();
      out.push_back("-x");
      out.push_back(lang == "cu" ? "cuda" : lang);
      continue;
    }
    if (a == "--std" || a == "-std") {
      out.push_back("-std=" + next());
      continue;
    }
    if (a.rfind("--std=", 0) == 0) {
      out.push_back(a.substr(1));
      continue;
    }
    if (a.rfind("-isystem=", 0) == 0) {  // CMake's spelling for nvcc
      out.push_back("-isystem" + a.substr(9));
      continue;
    }
    out.push_back(a);
  }
  return out;
}

// A Fortran source by its extension (what gfortran and CMake take for one): no Clang front end reads it.
bool is_fortran(const std::string& file) {
  static const std::set<std::string> kExt = {".f",   ".F",   ".for", ".FOR", ".ftn", ".FTN",
                                             ".fpp", ".FPP", ".f77", ".F77", ".f90", ".F90",
                                             ".f95", ".F95", ".f03", ".F03", ".f08", ".F08"};
  return kExt.count(fs::path(file).extension().string()) > 0;
}

// Compile commands for the files to lint: from compile_commands.json where listed, otherwise defaults
// chosen by file kind (and a note saying so).
class LintDatabase : public CompilationDatabase {
 public:
  LintDatabase(std::unique_ptr<CompilationDatabase> base, std::vector<std::string> extra, bool fixed)
      : base_(std::move(base)), extra_(std::move(extra)), fixed_(fixed) {}

  std::vector<CompileCommand> getCompileCommands(StringRef file) const override {
    if (base_ && !fixed_) {
      auto cmds = base_->getCompileCommands(file);
      if (!cmds.empty()) {
        cmds.resize(1);  // one analysis per file even when it is compiled several ways
        auto& cl = cmds[0].CommandLine;
        if (!cl.empty() && is_nvcc(cl[0])) cl = translate_nvcc(cl, cmds[0].Directory);
        // Inferred commands end in `-- FILE`: extra arguments go before the separator.
        auto sep = std::find(cl.begin(), cl.end(), "--");
        cl.insert(sep, extra_.begin(), extra_.end());
        return cmds;
      }
    }
    std::string f = file.str();
    std::vector<std::string> cmd{is_c(f) ? "clang" : "clang++"};
    if (!fixed_) {
      if (is_c(f))
        cmd.push_back("-std=c11");
      else if (!is_cuda(f))
        cmd.push_back("-std=c++17");
    }
    if (is_cuda(f)) cmd.push_back("-xcuda");
    for (const auto& a : extra_) cmd.push_back(a);
    cmd.push_back(f);
    return {CompileCommand(fs::current_path().string(), f, cmd, "")};
  }
  std::vector<std::string> getAllFiles() const override {
    return base_ ? base_->getAllFiles() : std::vector<std::string>{};
  }
  // Empty when the file has its own entry; otherwise what the analysis uses instead.
  std::string substitute_for(const std::string& file) const {
    if (base_) {
      auto cmds = base_->getCompileCommands(file);
      if (!cmds.empty() && cmds[0].Heuristic.empty()) return {};
      // JSON databases infer a command for unlisted files from the most similar listed one.
      if (!cmds.empty()) return "flags " + cmds[0].Heuristic;
    }
    return "default flags (" +
           std::string(is_c(file)      ? "-std=c11"
                       : is_cuda(file) ? "-xcuda"
                                       : "-std=c++17") +
           ")";
  }
  bool has_base() const { return base_ != nullptr; }

 private:
  std::unique_ptr<CompilationDatabase> base_;
  std::vector<std::string> extra_;
  bool fixed_;
};

class LintAction : public ASTFrontendAction {
 public:
  LintAction(const Catalog& c, const AnalysisOptions& o, std::vector<Finding>& out)
      : catalog_(c), opts_(o), out_(out) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance&, StringRef) override {
    return make_lint_consumer(catalog_, opts_, out_);
  }

 private:
  const Catalog& catalog_;
  const AnalysisOptions& opts_;
  std::vector<Finding>& out_;
};

class LintActionFactory : public FrontendActionFactory {
 public:
  LintActionFactory(const Catalog& c, const AnalysisOptions& o, std::vector<Finding>& out)
      : catalog_(c), opts_(o), out_(out) {}
  std::unique_ptr<FrontendAction> create() override {
    return std::make_unique<LintAction>(catalog_, opts_, out_);
  }

 private:
  const Catalog& catalog_;
  const AnalysisOptions& opts_;
  std::vector<Finding>& out_;
};

// Fault injection for the isolation tests: LOCKSTEP_LINT_FAULT=crash:NAME or throw:NAME makes the
// analysis of files whose path contains NAME crash (SIGSEGV) or throw, as an analyzer bug would.
void inject_fault(const std::string& file) {
  const char* spec = std::getenv("LOCKSTEP_LINT_FAULT");
  if (!spec) return;
  std::string s = spec;
  auto colon = s.find(':');
  if (colon == std::string::npos || file.find(s.substr(colon + 1)) == std::string::npos) return;
  if (s.compare(0, colon, "throw") == 0) throw std::runtime_error("injected fault");
  if (s.compare(0, colon, "crash") == 0) {
    volatile int* volatile p = nullptr;
    *p = 1;
  }
}

// The one-line reason a file could not be analyzed, from its compiler diagnostics: a missing header
// is named, with what to do about it.
std::string parse_failure(const std::string& diagnostics) {
  static const std::regex missing(R"(fatal error: '([^']+)' file not found)");
  std::smatch m;
  if (std::regex_search(diagnostics, m, missing))
    return "header '" + m[1].str() +
           "' not found; add its include directory to the compile command (after "
           "`--`, or in compile_commands.json) or install it";
  return "could not be parsed (errors above)";
}

ArgumentsAdjuster lint_adjuster(const std::string& cuda) {
  return [cuda](const CommandLineArguments& args, StringRef file) {
    CommandLineArguments out;
    bool cu = is_cuda(file.str());
    bool has_resource_dir = false;
    for (const auto& a : args) has_resource_dir |= a.rfind("-resource-dir", 0) == 0;
    out.push_back(args.empty() ? "clang++" : args[0]);
    if (!has_resource_dir) out.push_back("-resource-dir=" LOCKSTEP_CLANG_RESOURCE_DIR);
    // Compiler warnings are not lint's report; errors still are.
    out.push_back("-Wno-everything");
    if (cu) {
      out.push_back("--cuda-host-only");
      out.push_back("-Wno-unknown-cuda-version");
      out.push_back("-I" + cuda_shim_dir());
      out.push_back("-include");
      out.push_back(cuda_shim_dir() + "/lockstep_cuda_host.h");
      if (!cuda.empty()) out.push_back("--cuda-path=" + cuda);
      // CUDA 13 moved libcu++ (cuda/atomic, cuda/std/...) under include/cccl, which nvcc searches itself.
      if (!cuda.empty() && fs::exists(fs::path(cuda) / "include" / "cccl"))
        out.push_back("-isystem" + cuda + "/include/cccl");
      else
        out.push_back("-nocudainc");
    }
    for (size_t i = 1; i < args.size(); ++i) {
      const auto& a = args[i];
      // nvcc-only flags would stop the Clang driver; the device side is never compiled here.
      if (a.rfind("--generate-code", 0) == 0 || a.rfind("-gencode", 0) == 0 || a == "-Xcompiler" ||
          a.rfind("--expt-", 0) == 0 || a.rfind("-rdc", 0) == 0 || a == "--extended-lambda")
        continue;
      out.push_back(a);
    }
    return out;
  };
}

struct Sorter {
  bool operator()(const Finding& a, const Finding& b) const {
    return std::tie(a.at.file, a.at.line, a.at.column, a.rule, a.message) <
           std::tie(b.at.file, b.at.line, b.at.column, b.rule, b.message);
  }
};

int run_lint(Options opts) {
  Catalog catalog;
  try {
    const char* env = std::getenv("LOCKSTEP_RULES_DIR");
    std::string dir = env && *env ? env : LOCKSTEP_RULES_DIR;
    if (fs::is_directory(dir))
      catalog.load_dir(dir);
    else
      std::fprintf(stderr, "lockstep lint: note: no rules directory at %s; only --rules files apply\n",
                   dir.c_str());
    for (const auto& r : opts.rules) catalog.load_file(r);
  } catch (const std::exception& e) {
    throw cli::BadInput(std::string("lint: ") + e.what());
  }
  if (opts.format != "text" && opts.format != "json" && opts.format != "sarif")
    throw cli::BadInput("lint: --format must be text, json or sarif, not '" + opts.format + "'");
  AnalysisOptions analysis;
  analysis.assume.argv_local = catalog.argv_is_local();
  for (const auto& what : opts.assume_local) {
    if (what == "argv")
      analysis.assume.argv_local = true;
    else if (what == "env")
      analysis.assume.env_local = true;
    else
      throw cli::BadInput("lint: --assume-local takes argv and/or env, not '" + what + "'");
  }
  for (const auto& rule : opts.enable) {
    if (rule == "collective-after-error-exit")
      analysis.error_exit_rule = true;
    else if (rule != "conditional-collective" && rule != "rank-dependent-argument")
      throw cli::BadInput("lint: --enable: unknown rule '" + rule + "'");
  }

  std::unique_ptr<CompilationDatabase> base;
  std::string error;
  if (!opts.build_dir.empty()) {
    base = JSONCompilationDatabase::loadFromDirectory(opts.build_dir, error);
    if (!base)
      throw cli::BadInput("lint: " + opts.build_dir + ": cannot load compile_commands.json: " + error);
  } else if (!opts.have_fixed_args && !opts.files.empty()) {
    base = CompilationDatabase::autoDetectFromSource(fs::absolute(opts.files[0]).string(), error);
  }
  auto db = std::make_unique<LintDatabase>(std::move(base), opts.extra_args,
                                           opts.have_fixed_args && opts.build_dir.empty());

  std::vector<std::string> files;
  for (const auto& f : opts.files) {
    std::error_code ec;
    if (!fs::is_regular_file(f, ec)) throw cli::BadInput("lint: " + f + ": no such file");
    if (is_fortran(f))
      throw cli::BadInput(
          "lint: " + f +
          ": a Fortran source; lint reads C, C++ and CUDA (lockstep run traces Fortran programs)");
    files.push_back(fs::absolute(f).lexically_normal().string());
  }
  if (files.empty()) {
    if (!db->has_base())
      throw cli::BadInput("lint: no files given and no compile_commands.json (use -p BUILD_DIR)");
    files = db->getAllFiles();
    // Only the languages lint understands; generated or assembler sources are not its business.
    files.erase(std::remove_if(files.begin(), files.end(),
                               [](const std::string& f) {
                                 auto ext = fs::path(f).extension().string();
                                 return ext != ".c" && ext != ".cc" && ext != ".cpp" && ext != ".cxx" &&
                                        ext != ".cu" && ext != ".C";
                               }),
                files.end());
  }

  std::vector<ToolNote> tool_notes;
  for (const auto& f : files) {
    if (opts.have_fixed_args && opts.build_dir.empty()) continue;  // the user gave the flags
    if (std::string instead = db->substitute_for(f); !instead.empty()) {
      std::string msg = db->has_base() ? "not in compile_commands.json; analyzed with " + instead
                                       : "no compile_commands.json found; analyzed with " + instead;
      tool_notes.push_back({f, msg});
      std::fprintf(stderr, "%s: note: %s\n", f.c_str(), msg.c_str());
    }
  }

  llvm::CrashRecoveryContext::Enable();
  unsigned jobs = opts.jobs ? opts.jobs : std::max(1u, std::thread::hardware_concurrency());
  jobs = std::min<unsigned>(jobs, std::max<size_t>(1, files.size()));
  std::string cuda = cuda_root();
  if (std::any_of(files.begin(), files.end(), is_cuda)) cuda_shim_dir();
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::vector<Finding> findings;
  std::vector<std::string> failures;  // one line per file that could not be analyzed, printed last
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < files.size();) {
      std::vector<Finding> local;
      std::string diag_text;
      llvm::raw_string_ostream diag_stream(diag_text);
      auto diag_opts = llvm::makeIntrusiveRefCnt<DiagnosticOptions>();
      diag_opts->ShowColors = false;
      TextDiagnosticPrinter printer(diag_stream, diag_opts.get());
      ClangTool tool(*db, {files[i]});
      tool.appendArgumentsAdjuster(getClangStripOutputAdjuster());
      tool.appendArgumentsAdjuster(getClangSyntaxOnlyAdjuster());
      tool.appendArgumentsAdjuster(getClangStripDependencyFileAdjuster());
      tool.appendArgumentsAdjuster(lint_adjuster(cuda));
      tool.setDiagnosticConsumer(&printer);
      tool.setPrintErrorMessage(false);
      LintActionFactory factory(catalog, analysis, local);
      // A crash or an exception inside Clang or the analysis loses this file only: the others' findings
      // are still reported.
      int rc = 0;
      std::string internal;
      llvm::CrashRecoveryContext recovery;
      bool survived = recovery.RunSafely([&] {
        try {
          inject_fault(files[i]);
          rc = tool.run(&factory);
        } catch (const std::exception& e) {
          internal = e.what();
        }
      });
      diag_stream.flush();
      std::lock_guard<std::mutex> lock(mu);
      if (!diag_text.empty()) std::fputs(diag_text.c_str(), stderr);
      if (!survived || !internal.empty()) {
        local.clear();  // a half-finished analysis may have missed what it had not reached
        std::string msg = "internal error analyzing " + files[i] + (internal.empty() ? "" : ": " + internal);
        failures.push_back("lockstep: " + msg);
        tool_notes.push_back({files[i], msg});
      } else if (rc != 0) {
        std::string msg = parse_failure(diag_text);
        failures.push_back("lockstep lint: " + files[i] + ": " + msg);
        tool_notes.push_back({files[i], "not analyzed: " + msg});
      }
      for (auto& f : local) findings.push_back(std::move(f));
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < jobs; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();

  // Headers seen by several translation units yield the same finding more than once.
  std::sort(findings.begin(), findings.end(), Sorter{});
  findings.erase(
      std::unique(findings.begin(), findings.end(),
                  [](const Finding& a, const Finding& b) { return !Sorter{}(a, b) && !Sorter{}(b, a); }),
      findings.end());

  std::string rendered = opts.format == "json"    ? render_json(findings, tool_notes)
                         : opts.format == "sarif" ? render_sarif(findings, tool_notes, LOCKSTEP_VERSION)
                                                  : render_text(findings);
  try {
    cli::write_output(rendered, opts.output);
  } catch (const cli::BadInput& e) {
    throw cli::BadInput(std::string("lint: ") + e.what());
  }
  // Every finding first, then what could not be analyzed: findings decide the exit code, so that a CI
  // gate sees them even when some files failed; 2 only when nothing was found and something failed.
  std::sort(failures.begin(), failures.end());
  for (const auto& line : failures) std::fprintf(stderr, "%s\n", line.c_str());
  if (!findings.empty()) return cli::kFindings;
  return failures.empty() ? cli::kClean : cli::kBadInput;
}

// CLI11 hands everything after `--` to the positional `files`; the command line itself says how many of
// them came after the separator, and those are compiler arguments.
void split_compiler_args(Options& opts) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  for (std::string a; std::getline(in, a, '\0');) argv.push_back(a);
  auto lint_pos = std::find(argv.begin(), argv.end(), "lint");
  if (lint_pos == argv.end()) return;
  auto sep = std::find(lint_pos, argv.end(), "--");
  if (sep == argv.end()) return;
  size_t after = std::min(static_cast<size_t>(argv.end() - sep - 1), opts.files.size());
  opts.extra_args.assign(opts.files.end() - static_cast<long>(after), opts.files.end());
  opts.files.resize(opts.files.size() - after);
  opts.have_fixed_args = true;
}

}  // namespace
}  // namespace lockstep::lint

LOCKSTEP_COMMAND(lint, [](CLI::App& app) {
  auto opts = std::make_shared<lockstep::lint::Options>();
  auto* cmd = app.add_subcommand(
      "lint", "Statically find collectives that only some ranks reach or that get rank-dependent arguments");
  cmd->add_option("-p,--build-dir", opts->build_dir, "Directory holding compile_commands.json");
  cmd->add_option("files", opts->files, "Source files (default: every file in compile_commands.json)")
      ->allow_extra_args(true);
  // Declared after `files` and never filled: it only makes CLI11 keep the arguments after `--` in this
  // subcommand (they land in `files` and are split off by position).
  static std::string separator_anchor;
  cmd->add_option("compiler-args", separator_anchor, "Compiler arguments, after `--`");
  cmd->allow_extras(true);
  cmd->add_option("-j,--jobs", opts->jobs, "Translation units analyzed in parallel (default: CPU count)");
  cmd->add_option("--rules", opts->rules, "Extra API catalog (YAML) with your own collective wrappers")
      ->allow_extra_args(false);
  lockstep::cli::add_output_options(cmd, opts->format, opts->output, {"text", "json", "sarif"});
  cmd->add_option("--assume-local", opts->assume_local,
                  "Inputs that differ between ranks under your launcher: argv, env (default: neither)")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--enable", opts->enable, "Rules off by default to turn on: collective-after-error-exit")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->footer(
      "Compiler arguments after `--` apply to every file (and replace compile_commands.json lookups unless "
      "-p is given).");
  cmd->callback([opts, cmd] {
    for (const auto& extra : cmd->remaining())
      if (extra != "--") throw lockstep::cli::BadInput("lint: unexpected argument '" + extra + "'");
    lockstep::lint::split_compiler_args(*opts);
    lockstep::cli::set_exit_code(lockstep::lint::run_lint(*opts));
  });
});
