// main() for a fuzz target without libFuzzer: runs LLVMFuzzerTestOneInput on every file
// named on the command line, and on every file inside the folders named (not recursive).
// A crash or failed check aborts with the file's name printed first.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {
bool run_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", p.c_str());
    return false;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "replay: %s (%zu bytes)\n", p.c_str(), bytes.size());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  size_t files = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::vector<std::filesystem::path> paths;
    if (std::filesystem::is_directory(arg)) {
      for (const auto& e : std::filesystem::directory_iterator(arg)) {
        if (e.is_regular_file()) paths.push_back(e.path());
      }
      std::sort(paths.begin(), paths.end());
    } else {
      paths.push_back(arg);
    }
    for (const auto& p : paths) {
      if (!run_file(p)) return 1;
      ++files;
    }
  }
  if (files == 0) {
    std::fprintf(stderr, "replay: no input files given\n");
    return 1;
  }
  std::printf("replay: %zu inputs, no crash\n", files);
  return 0;
}
