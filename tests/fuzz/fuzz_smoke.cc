// Runs the fuzz target's entry function without libFuzzer (so the ordinary g++ build exercises it):
// every seed as is, then deterministic mutations of them (byte flips, boundary values in the header,
// truncations, grown lengths).
#include <dirent.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fuzz_smoke CORPUS_DIR MUTATIONS\n");
    return 2;
  }
  std::vector<std::string> seeds;
  if (DIR* d = opendir(argv[1])) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream in(std::string(argv[1]) + "/" + e->d_name, std::ios::binary);
      seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    closedir(d);
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "fuzz_smoke: no seeds in %s\n", argv[1]);
    return 2;
  }
  for (const auto& s : seeds) LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  const long n = std::strtol(argv[2], nullptr, 10);
  std::mt19937_64 rng(20261202);
  static const uint64_t kEdges[] = {
      0, 1, 63, 64, 4095, 4096, 0x7FFFFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFFull, 1ull << 40, 1ull << 63};
  for (long i = 0; i < n; ++i) {
    std::string b = seeds[rng() % seeds.size()];
    switch (rng() % 4) {
      case 0:  // random flips anywhere
        for (int f = 1 + int(rng() % 8); f > 0 && !b.empty(); --f) b[rng() % b.size()] = char(rng());
        break;
      case 1: {  // an edge value into an aligned header field (offsets, sizes, counters)
        uint64_t v = kEdges[rng() % std::size(kEdges)];
        size_t at = (rng() % 16) * 8;
        if (at + 8 <= b.size()) std::memcpy(&b[at], &v, 8);
        break;
      }
      case 2:  // cut anywhere
        b.resize(b.empty() ? 0 : rng() % b.size());
        break;
      default: {  // an edge value into a record or metadata word/length
        uint64_t v = kEdges[rng() % std::size(kEdges)];
        size_t at = 4096 + (rng() % ((b.size() > 4160 ? b.size() - 4160 : 1) / 4 + 1)) * 4;
        if (at + 4 <= b.size()) std::memcpy(&b[at], &v, 4);
      }
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  }
  std::printf("fuzz_smoke: %zu seeds, %ld mutated inputs, no crash\n", seeds.size(), n);
  return 0;
}
