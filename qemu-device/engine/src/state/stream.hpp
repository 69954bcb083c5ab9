// SPDX-License-Identifier: GPL-2.0-or-later
// The byte stream of a saved engine (ohca_engine_save / ohca_engine_load,
// docs/migration.md): little-endian fixed-width fields in sections, each
// section a tag, a version and a length. Writer appends; Reader takes the
// stream as hostile input (it comes from another host): every read is
// bounded by the bytes left in its section, the first failure is kept
// (with where it happened) and every later read returns 0, so a loader
// reads on and checks ok() at its end; counts are checked against a
// limit and against the bytes left before anything is allocated for them.
//
// Times: the engine's deadlines and timestamps are on the host's clock
// (now_ns), which the loading host does not share. They travel relative
// to the saving engine's clock and come back relative to the loading
// one's, so a timer with 3 ms left has 3 ms left after the load.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace ohca::state {

// Section tags: four characters, in the order the stream holds them.
constexpr uint32_t tag(const char (&s)[5]) {
    return uint32_t{static_cast<uint8_t>(s[0])} | uint32_t{static_cast<uint8_t>(s[1])} << 8 |
           uint32_t{static_cast<uint8_t>(s[2])} << 16 | uint32_t{static_cast<uint8_t>(s[3])} << 24;
}

class Writer {
  public:
    explicit Writer(uint64_t now_ns) : now_(now_ns) {}

    void u8(uint8_t v) { buf_.push_back(v); }
    void u16(uint16_t v) { le(v, 2); }
    void u32(uint32_t v) { le(v, 4); }
    void u64(uint64_t v) { le(v, 8); }
    void boolean(bool v) { u8(v ? 1 : 0); }
    void bytes(std::span<const uint8_t> b) { buf_.insert(buf_.end(), b.begin(), b.end()); }
    template <size_t N> void array(const std::array<uint8_t, N> &a) { bytes(a); }
    // A time on the engine's clock; 0 (none) stays 0.
    void time(uint64_t t_ns);

    // A section: its header now, its length when it ends.
    void begin(uint32_t tag, uint16_t version);
    void end();

    [[nodiscard]] std::vector<uint8_t> &data() { return buf_; }

  private:
    void le(uint64_t v, unsigned int n) {
        for (unsigned int i = 0; i < n; ++i) {
            buf_.push_back(static_cast<uint8_t>(v >> (8 * i)));
        }
    }
    uint64_t now_;
    std::vector<uint8_t> buf_;
    size_t section_ = 0; // where the open section's length goes
};

class Reader {
  public:
    Reader(std::span<const uint8_t> data, uint64_t now_ns)
        : data_(data), end_(data.size()), now_(now_ns) {}

    uint8_t u8();
    uint16_t u16() { return static_cast<uint16_t>(le(2)); }
    uint32_t u32() { return static_cast<uint32_t>(le(4)); }
    uint64_t u64() { return le(8); }
    // 0 or 1; anything else is a corrupt stream.
    bool boolean();
    // A value in [0, max].
    uint32_t upto(uint32_t max, const char *what);
    void bytes(std::span<uint8_t> out);
    template <size_t N> void array(std::array<uint8_t, N> &a) { bytes(a); }
    uint64_t time();
    // A count of elements of at least 'min_bytes' each: at most 'max', and
    // no more than the section's bytes left can hold (so nothing is
    // allocated for elements the stream does not have).
    uint32_t count(uint32_t max, size_t min_bytes, const char *what);

    // The next section must be 'tag' with a version from 1 to
    // 'max_version' (the version is returned); reads are then bounded by
    // its length until leave(), which checks it was read to its end.
    uint16_t enter(uint32_t tag, uint16_t max_version, const char *name);
    void leave();
    // The stream has nothing after its last section.
    void finish();

    // The first failure is kept; reads after it return 0.
    void fail(const std::string &why);
    [[nodiscard]] bool ok() const { return error_.empty(); }
    [[nodiscard]] const std::string &error() const { return error_; }

  private:
    uint64_t le(unsigned int n);
    bool take(size_t n);
    [[nodiscard]] size_t left() const { return end_ - pos_; }

    std::span<const uint8_t> data_;
    size_t pos_ = 0;
    size_t end_;               // of the open section, else of the data
    const char *section_ = ""; // the open section's name, for errors
    uint64_t now_;
    std::string error_;
};

// A struct of uint64_t counters, as a count and the values: a later
// engine may have more (a stream with fewer loads, the rest 0), never
// fewer than a stream it loads holds.
template <class T> void save_counters(Writer &w, const T &c) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % sizeof(uint64_t) == 0);
    std::array<uint64_t, sizeof(T) / sizeof(uint64_t)> v{};
    std::memcpy(v.data(), &c, sizeof(T));
    w.u32(static_cast<uint32_t>(v.size()));
    for (const uint64_t x : v) {
        w.u64(x);
    }
}
template <class T> void load_counters(Reader &r, T &c, const char *what) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % sizeof(uint64_t) == 0);
    std::array<uint64_t, sizeof(T) / sizeof(uint64_t)> v{};
    const uint32_t n = r.count(static_cast<uint32_t>(v.size()), sizeof(uint64_t), what);
    for (uint32_t i = 0; i < n; ++i) {
        v[i] = r.u64();
    }
    if (r.ok()) {
        std::memcpy(static_cast<void *>(&c), v.data(), sizeof(T));
    }
}

} // namespace ohca::state
