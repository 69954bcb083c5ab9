// SPDX-License-Identifier: GPL-2.0-or-later
// A pcap file of InfiniBand packets (LINKTYPE_INFINIBAND, 247: each
// record one packet from the LRH to the VCRC) or of Ethernet frames
// (LINKTYPE_ETHERNET, 1: destination MAC to payload, no FCS).
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>

namespace ohca::fabric {

class PcapWriter {
  public:
    static constexpr uint32_t kLinkTypeInfiniband = 247;
    static constexpr uint32_t kLinkTypeEthernet = 1;

    PcapWriter() = default;
    PcapWriter(const PcapWriter &) = delete;
    PcapWriter &operator=(const PcapWriter &) = delete;
    ~PcapWriter() { close(); }

    bool open(const char *path, uint32_t link_type = kLinkTypeInfiniband);
    void write(std::span<const uint8_t> frame, uint64_t realtime_ns);
    void close();
    [[nodiscard]] bool is_open() const { return f_ != nullptr; }

  private:
    std::FILE *f_ = nullptr;
};

} // namespace ohca::fabric
