// analyze_dir(): load, symbolize, analyze (analyze_dir.h). The symbolizer is shared by the loader
// (call-site keys for alignment) and the analysis (names in findings), so each address resolves once.
#include "lockstep/check/analyze_dir.h"

#include <memory>

#include "symbolize/symbolize.h"

namespace lockstep::check {
namespace {

std::vector<format::Module> modules_of(const Rank& rank) {
  std::vector<format::Module> mods;
  for (auto& m : rank.modules) mods.push_back({m.path, m.build_id, m.base, m.lo, m.hi});
  return mods;
}

Symbolizer make_symbolizer(const std::shared_ptr<symbolize::Symbolizer>& sym) {
  return [sym](const Rank& rank, Site& site) {
    symbolize::Location loc = sym->call_site(modules_of(rank), site.address);
    if (!loc.function.empty()) site.function = loc.function;
    if (loc.has_line()) {
      site.file = loc.file;
      site.line = int(loc.line);
    }
  };
}

// Calls on one source line are one site, whatever copies of the line the optimizer made.
SiteKeys make_site_keys(const std::shared_ptr<symbolize::Symbolizer>& sym) {
  return [sym](const Rank& rank, const std::vector<uint64_t>& addrs) {
    std::vector<symbolize::Location> locs = sym->call_sites(modules_of(rank), addrs);
    std::vector<uint64_t> keys = module_site_keys(rank, addrs);
    for (size_t i = 0; i < addrs.size() && i < locs.size(); ++i)
      if (locs[i].has_line())
        keys[i] = std::hash<std::string>()(locs[i].file + ":" + std::to_string(locs[i].line));
    return keys;
  };
}

// The loader's part of the options, as given, with the call sites keyed through `sym` where given.
LoadOptions with_site_keys(const DirOptions& options, const std::shared_ptr<symbolize::Symbolizer>& sym) {
  LoadOptions lo = options;
  if (sym) lo.site_keys = make_site_keys(sym);
  return lo;
}
}  // namespace

LoadOptions loader_options(const DirOptions& options) {
  return with_site_keys(options, options.symbolize ? std::make_shared<symbolize::Symbolizer>() : nullptr);
}

Analysis analyze_dir(const std::vector<std::string>& inputs, const DirOptions& options) {
  Analysis a;
  std::shared_ptr<symbolize::Symbolizer> sym;
  if (options.symbolize) {
    sym = std::make_shared<symbolize::Symbolizer>();
    a.symbolize = make_symbolizer(sym);
  }
  a.job = load_paths(inputs, with_site_keys(options, sym));
  if (sym && sym->tool().empty())
    a.job.warnings.push_back(
        "no symbolizer found (llvm-symbolizer, addr2line or $LOCKSTEP_SYMBOLIZER): call sites are "
        "module+offset");
  if (options.analyze) {
    Options ao;
    ao.symbolize = a.symbolize;
    ao.allow_callsite_differences = options.allow_callsite_differences;
    ao.jobs = options.jobs;
    a.result = analyze(a.job, ao);
  }
  return a;
}

}  // namespace lockstep::check
