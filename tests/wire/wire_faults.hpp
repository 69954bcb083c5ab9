// SPDX-License-Identifier: GPL-2.0-or-later
// The fault logic of ohca_wire, without sockets: one FaultLine per
// direction decides, from a seeded PRNG, what happens to each frame (drop,
// duplicate, hold back behind the next frame, delay, corrupt one bit) and
// hands back the frames due at a given time. Same seed and same input
// sequence: same output sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace ohca_wire {

inline constexpr uint16_t kRoceUdpPort = 4791;

struct FaultConfig {
    double loss = 0;      // probability a frame is dropped
    double dup = 0;       // ... delivered twice
    double reorder = 0;   // ... held back and delivered after the next frame
    double delay = 0;     // ... delayed by up to delay_us
    double corrupt = 0;   // ... has one bit flipped
    uint64_t delay_us = 2000;
    uint64_t hold_us = 5000; // a held frame goes anyway after this long
    bool roce_only = true;   // faults only for UDP/4791 frames
};

struct DirStats {
    uint64_t rx = 0;         // frames in
    uint64_t tx = 0;         // frames out (duplicates included)
    uint64_t roce = 0;       // RoCE frames in
    uint64_t dropped = 0;
    uint64_t duplicated = 0;
    uint64_t reordered = 0;
    uint64_t delayed = 0;
    uint64_t corrupted = 0;
};

// Where the UDP payload of a RoCEv2 frame starts (Ethernet, optional VLAN,
// IPv4 or IPv6, UDP destination port 4791), or nothing.
std::optional<size_t> roce_payload_offset(const std::vector<uint8_t> &frame);

class FaultLine {
  public:
    FaultLine(const FaultConfig &cfg, uint64_t seed);

    // A frame arrives at time now_us.
    void push(uint64_t now_us, std::vector<uint8_t> frame);
    // Frames due at or before now_us, in delivery order.
    std::vector<std::vector<uint8_t>> pop_due(uint64_t now_us);
    // When the next frame is due, if any is waiting.
    [[nodiscard]] std::optional<uint64_t> next_due() const;
    [[nodiscard]] const DirStats &stats() const { return stats_; }

  private:
    struct Pending {
        uint64_t due;
        uint64_t seq;
        std::vector<uint8_t> frame;
    };
    double uniform();
    uint64_t next_u64();
    void schedule(uint64_t due, std::vector<uint8_t> frame);

    FaultConfig cfg_;
    uint64_t state_;
    uint64_t seq_ = 0;
    std::vector<Pending> queue_;
    std::optional<Pending> held_;
    DirStats stats_;
};

} // namespace ohca_wire
