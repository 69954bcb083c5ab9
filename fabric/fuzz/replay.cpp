// SPDX-License-Identifier: GPL-2.0-or-later
// Runs a fuzzer's entry point without libFuzzer (any compiler): over every
// file in the directories given, then over a fixed set of pseudo-random
// inputs, so ctest keeps the fuzz entry points and their invariants honest.
#include <cstdint>
#include <cstdio>
#include <dirent.h>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
    size_t files = 0;
    for (int a = 1; a < argc; ++a) {
        DIR *d = opendir(argv[a]);
        if (d == nullptr) {
            continue;
        }
        while (dirent *e = readdir(d)) {
            if (e->d_name[0] == '.') {
                continue;
            }
            const std::string path = std::string(argv[a]) + "/" + e->d_name;
            FILE *f = std::fopen(path.c_str(), "rb");
            if (f == nullptr) {
                continue;
            }
            std::vector<uint8_t> buf(1 << 16);
            buf.resize(std::fread(buf.data(), 1, buf.size(), f));
            std::fclose(f);
            LLVMFuzzerTestOneInput(buf.data(), buf.size());
            ++files;
        }
        closedir(d);
    }
    std::mt19937 rng(1);
    for (int i = 0; i < 300; ++i) {
        std::vector<uint8_t> buf(rng() % 4096);
        for (auto &b : buf) {
            b = static_cast<uint8_t>(rng());
        }
        LLVMFuzzerTestOneInput(buf.data(), buf.size());
    }
    std::printf("replay: %zu files, 300 random inputs\n", files);
    return 0;
}
