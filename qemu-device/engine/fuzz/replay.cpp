// SPDX-License-Identifier: GPL-2.0-or-later
// Runs a fuzzer's LLVMFuzzerTestOneInput over files and directories without
// libFuzzer, so corpus and regression inputs run under ctest with any
// compiler (and under OHCA_ENGINE_SANITIZE). Usage: <replay> PATH...
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace fs = std::filesystem;

static bool run_file(const fs::path &p) {
    std::ifstream f(p, std::ios::binary);
    if (!f) {
        std::fprintf(stderr, "replay: cannot read %s\n", p.c_str());
        return false;
    }
    std::vector<uint8_t> data((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
    // Exact-size copy so sanitizers see over-reads of the input.
    std::vector<uint8_t> exact(data.begin(), data.end());
    LLVMFuzzerTestOneInput(exact.data(), exact.size());
    return true;
}

int main(int argc, char **argv) {
    unsigned int n = 0;
    bool ok = true;
    for (int i = 1; i < argc; ++i) {
        const fs::path p(argv[i]);
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            std::vector<fs::path> files;
            for (const auto &ent : fs::directory_iterator(p)) {
                if (ent.is_regular_file() && ent.path().filename().string()[0] != '.') {
                    files.push_back(ent.path());
                }
            }
            std::sort(files.begin(), files.end());
            for (const auto &f : files) {
                ok = run_file(f) && ok;
                ++n;
            }
        } else if (fs::exists(p, ec)) {
            ok = run_file(p) && ok;
            ++n;
        } else {
            std::printf("replay: %s does not exist, skipped\n", argv[i]);
        }
    }
    std::printf("replay: %u inputs, no crash\n", n);
    return ok ? 0 : 1;
}
