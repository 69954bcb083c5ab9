// SPDX-License-Identifier: GPL-2.0-or-later
#include "engine_state.hpp"

#include "link/crc32.hpp"

#include <cstring>
#include <span>

namespace ohca::test {

StateSection state_section(const std::vector<uint8_t> &s, const char *tag) {
    constexpr size_t kHeader = 10;
    size_t at = 0;
    while (at + kHeader <= s.size()) {
        uint32_t len = 0;
        std::memcpy(&len, s.data() + at + 6, 4);
        if (std::memcmp(s.data() + at, tag, 4) == 0) {
            return {at, at + kHeader, len};
        }
        at += kHeader + len;
    }
    return {s.size(), s.size(), 0};
}

void reseal_state(std::vector<uint8_t> &s) {
    if (s.size() < 4) {
        return;
    }
    const uint32_t crc =
        ~crc32::update(~uint32_t{0}, std::span<const uint8_t>(s).first(s.size() - 4));
    std::memcpy(s.data() + s.size() - 4, &crc, 4);
}

SpareEngine::SpareEngine(const ohca_engine_config &cfg) {
    const ohca_engine_ops ops = FakeHost::ops();
    e = ohca_engine_create(&ops, &host, &cfg);
}

SpareEngine::~SpareEngine() {
    ohca_engine_destroy(e);
}

std::string SpareEngine::load(const std::vector<uint8_t> &s) {
    char err[256] = "";
    const int rc = ohca_engine_load(e, s.data(), s.size(), err, sizeof(err));
    return rc == 0 ? std::string() : std::string(err);
}

void SpareEngine::run_after(uint64_t ns) {
    host.now += ns;
    ohca_engine_process(e);
    host.wire.clear();
}

} // namespace ohca::test
