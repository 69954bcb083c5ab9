// SPDX-License-Identifier: GPL-2.0-or-later
// QEMU's stream netdev framing: each frame is a 4-byte big-endian length,
// then the frame. StreamReader cuts a byte stream into frames with a
// buffer of one largest frame (4222 bytes for InfiniBand, 9022 for
// Ethernet): a length above the limit is a frame too large to keep —
// its bytes are skipped as they come, never stored. StreamWriter is a
// port's output: frames framed, waiting for the socket to take them.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ohca::fabric {

template <size_t MaxFrame> class BasicStreamReader {
  public:
    static constexpr size_t kMaxFrame = MaxFrame;

    struct Stats {
        uint64_t frames = 0;
        uint64_t oversize = 0; // frames longer than kMaxFrame, skipped
        uint64_t bytes_skipped = 0;
    };

    // Feeds bytes; for every complete frame calls on_frame(span). Returns
    // the bytes consumed (always all of them). Work is linear in the input.
    template <typename F> size_t feed(std::span<const uint8_t> in, F &&on_frame) {
        size_t i = 0;
        while (i < in.size()) {
            if (skip_ > 0) {
                const size_t n = std::min<size_t>(skip_, in.size() - i);
                skip_ -= n;
                stats_.bytes_skipped += n;
                i += n;
                continue;
            }
            if (have_len_ < 4) {
                len_bytes_[have_len_++] = in[i++];
                if (have_len_ == 4) {
                    want_ = (static_cast<uint32_t>(len_bytes_[0]) << 24) |
                            (static_cast<uint32_t>(len_bytes_[1]) << 16) |
                            (static_cast<uint32_t>(len_bytes_[2]) << 8) | len_bytes_[3];
                    got_ = 0;
                    if (want_ > kMaxFrame) {
                        ++stats_.oversize;
                        skip_ = want_;
                        have_len_ = 0;
                    } else if (want_ == 0) {
                        have_len_ = 0;
                        ++stats_.frames;
                        on_frame(std::span<const uint8_t>(buf_.data(), 0));
                    }
                }
                continue;
            }
            const size_t n = std::min<size_t>(want_ - got_, in.size() - i);
            std::copy_n(in.begin() + static_cast<long>(i), n, buf_.begin() + got_);
            got_ += static_cast<uint32_t>(n);
            i += n;
            if (got_ == want_) {
                have_len_ = 0;
                ++stats_.frames;
                on_frame(std::span<const uint8_t>(buf_.data(), want_));
            }
        }
        return in.size();
    }

    void reset() {
        have_len_ = 0;
        want_ = got_ = 0;
        skip_ = 0;
    }
    [[nodiscard]] const Stats &stats() const { return stats_; }

  private:
    std::array<uint8_t, kMaxFrame> buf_{};
    std::array<uint8_t, 4> len_bytes_{};
    size_t have_len_ = 0;
    uint32_t want_ = 0;
    uint32_t got_ = 0;
    uint64_t skip_ = 0;
    Stats stats_;
};

using StreamReader = BasicStreamReader<4222>; // ib::kMaxFrameBytes

class StreamWriter {
  public:
    // A frame, framed; returns where it lies in the buffer (the caller
    // may still edit it, until the next append or consume).
    std::span<uint8_t> append(std::span<const uint8_t> frame) {
        const auto n = static_cast<uint32_t>(frame.size());
        const uint8_t len[4] = {static_cast<uint8_t>(n >> 24), static_cast<uint8_t>(n >> 16),
                                static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)};
        buf_.insert(buf_.end(), len, len + 4);
        const size_t at = buf_.size();
        buf_.insert(buf_.end(), frame.begin(), frame.end());
        return {buf_.data() + at, frame.size()};
    }
    // What waits for the socket.
    [[nodiscard]] std::span<const uint8_t> pending() const {
        return std::span<const uint8_t>(buf_).subspan(off_);
    }
    [[nodiscard]] size_t size() const { return buf_.size() - off_; }
    // The socket took 'n' bytes. The buffer is compacted once more than
    // 'compact_at' bytes lie before what waits, so it never holds more
    // than that beyond what waits.
    void consume(size_t n, size_t compact_at) {
        off_ = std::min(buf_.size(), off_ + n);
        if (off_ == buf_.size()) {
            clear();
        } else if (off_ > compact_at) {
            buf_.erase(buf_.begin(), buf_.begin() + static_cast<long>(off_));
            off_ = 0;
        }
    }
    void clear() {
        buf_.clear();
        off_ = 0;
    }

  private:
    std::vector<uint8_t> buf_;
    size_t off_ = 0;
};

} // namespace ohca::fabric
