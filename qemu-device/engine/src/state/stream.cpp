// SPDX-License-Identifier: GPL-2.0-or-later
#include "state/stream.hpp"

#include <algorithm>
#include <cstring>

namespace ohca::state {

namespace {
constexpr size_t kSectionHeader = 4 + 2 + 4; // tag, version, length
} // namespace

void Writer::time(uint64_t t_ns) {
    if (t_ns == 0) {
        u8(0);
        return;
    }
    u8(1);
    u64(t_ns - now_); // two's complement: in the past is negative
}

void Writer::begin(uint32_t tag, uint16_t version) {
    u32(tag);
    u16(version);
    section_ = buf_.size();
    u32(0);
}

void Writer::end() {
    const auto len = static_cast<uint32_t>(buf_.size() - section_ - 4);
    for (unsigned int i = 0; i < 4; ++i) {
        buf_[section_ + i] = static_cast<uint8_t>(len >> (8 * i));
    }
}

void Reader::fail(const std::string &why) {
    if (error_.empty()) {
        error_ = std::string(section_) + (section_[0] != '\0' ? ": " : "") + why + " (byte " +
                 std::to_string(pos_) + ")";
    }
    pos_ = end_; // nothing more is read
}

bool Reader::take(size_t n) {
    if (!ok()) {
        return false;
    }
    if (n > left()) {
        fail("truncated");
        return false;
    }
    return true;
}

uint64_t Reader::le(unsigned int n) {
    if (!take(n)) {
        return 0;
    }
    uint64_t v = 0;
    for (unsigned int i = 0; i < n; ++i) {
        v |= uint64_t{data_[pos_ + i]} << (8 * i);
    }
    pos_ += n;
    return v;
}

uint8_t Reader::u8() {
    return static_cast<uint8_t>(le(1));
}

bool Reader::boolean() {
    const uint8_t v = u8();
    if (v > 1) {
        fail("a flag is neither 0 nor 1");
        return false;
    }
    return v != 0;
}

uint32_t Reader::upto(uint32_t max, const char *what) {
    const uint32_t v = u32();
    if (v > max) {
        fail(std::string(what) + " " + std::to_string(v) + " above " + std::to_string(max));
        return 0;
    }
    return v;
}

void Reader::bytes(std::span<uint8_t> out) {
    if (!take(out.size())) {
        std::fill(out.begin(), out.end(), uint8_t{0});
        return;
    }
    if (!out.empty()) {
        std::memcpy(out.data(), data_.data() + pos_, out.size());
    }
    pos_ += out.size();
}

uint64_t Reader::time() {
    const uint8_t set = u8();
    if (set == 0) {
        return 0;
    }
    if (set != 1) {
        fail("bad time");
        return 0;
    }
    const auto delta = static_cast<int64_t>(u64());
    if (!ok()) {
        return 0;
    }
    // Relative to this engine's clock; long past saturates at 1 (a time
    // nonzero and past), far future at the clock's end.
    if (delta < 0) {
        const uint64_t back = uint64_t{0} - static_cast<uint64_t>(delta);
        return back >= now_ ? 1 : now_ - back;
    }
    const auto ahead = static_cast<uint64_t>(delta);
    return ahead > UINT64_MAX - now_ ? UINT64_MAX : now_ + ahead;
}

uint32_t Reader::count(uint32_t max, size_t min_bytes, const char *what) {
    const uint32_t n = u32();
    if (!ok()) {
        return 0;
    }
    if (n > max) {
        fail(std::string(what) + ": " + std::to_string(n) + " above the limit " +
             std::to_string(max));
        return 0;
    }
    if (min_bytes != 0 && n > left() / min_bytes) {
        fail(std::string(what) + ": " + std::to_string(n) + " do not fit in what is left");
        return 0;
    }
    return n;
}

uint16_t Reader::enter(uint32_t tag, uint16_t max_version, const char *name) {
    if (!ok()) {
        return 0;
    }
    section_ = "";
    if (left() < kSectionHeader) {
        section_ = name;
        fail("section missing (stream truncated)");
        return 0;
    }
    const uint32_t t = u32();
    const uint16_t version = u16();
    const uint32_t len = u32();
    section_ = name;
    if (t != tag) {
        fail("expected this section, found tag 0x" + [&] {
            char b[9];
            static const char hex[] = "0123456789abcdef";
            for (int i = 0; i < 8; ++i) {
                b[i] = hex[(t >> (28 - 4 * i)) & 0xf];
            }
            b[8] = '\0';
            return std::string(b);
        }());
        return 0;
    }
    if (version == 0 || version > max_version) {
        fail("version " + std::to_string(version) + " is not one this engine loads (1.." +
             std::to_string(max_version) + ")");
        return 0;
    }
    if (len > left()) {
        fail("length " + std::to_string(len) + " beyond the stream (truncated)");
        return 0;
    }
    end_ = pos_ + len;
    return version;
}

void Reader::leave() {
    if (ok() && pos_ != end_) {
        fail(std::to_string(end_ - pos_) + " bytes left over at the section's end");
    }
    if (ok()) {
        end_ = data_.size();
        section_ = "";
    }
}

void Reader::finish() {
    if (ok() && pos_ != data_.size()) {
        fail("bytes after the last section");
    }
}

} // namespace ohca::state
