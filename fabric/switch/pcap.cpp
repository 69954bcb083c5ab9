// SPDX-License-Identifier: GPL-2.0-or-later
#include "pcap.hpp"

#include <cstring>

namespace ohca::fabric {

namespace {
void le32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; ++i) {
        p[i] = static_cast<uint8_t>(v >> (8 * i));
    }
}
} // namespace

bool PcapWriter::open(const char *path, uint32_t link_type) {
    close();
    f_ = std::fopen(path, "wb");
    if (f_ == nullptr) {
        return false;
    }
    uint8_t h[24] = {};
    le32(h, 0xa1b2c3d4); // microsecond timestamps, little endian
    h[4] = 2;            // version 2.4
    h[6] = 4;
    le32(h + 16, 65535); // snaplen
    le32(h + 20, link_type);
    return std::fwrite(h, sizeof h, 1, f_) == 1;
}

void PcapWriter::write(std::span<const uint8_t> frame, uint64_t realtime_ns) {
    if (f_ == nullptr) {
        return;
    }
    uint8_t r[16];
    le32(r, static_cast<uint32_t>(realtime_ns / 1'000'000'000));
    le32(r + 4, static_cast<uint32_t>(realtime_ns % 1'000'000'000 / 1000));
    le32(r + 8, static_cast<uint32_t>(frame.size()));
    le32(r + 12, static_cast<uint32_t>(frame.size()));
    std::fwrite(r, sizeof r, 1, f_);
    std::fwrite(frame.data(), 1, frame.size(), f_);
}

void PcapWriter::close() {
    if (f_ != nullptr) {
        std::fclose(f_);
        f_ = nullptr;
    }
}

} // namespace ohca::fabric
