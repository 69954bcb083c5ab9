// SPDX-License-Identifier: GPL-2.0-or-later
// A switch core's --timeline: one JSON line per interval, written by the
// event loop's callback. This keeps when a line is due (the first tick
// starts the clock; the program's last line at exit comes whatever the
// interval); the core writes what goes in it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace ohca::fabric {

class Timeline {
  public:
    using Fn = std::function<void(const std::string &line)>;

    void set(uint64_t interval_ns, Fn fn) {
        interval_ns_ = interval_ns;
        fn_ = std::move(fn);
    }
    // Whether a line is due at now_ns ('force': due if there is a
    // timeline at all); a due line is taken as written now.
    bool due(uint64_t now_ns, bool force) {
        if (!fn_ || interval_ns_ == 0) {
            return false;
        }
        if (started_ && now_ns - last_ns_ < interval_ns_ && !force) {
            return false;
        }
        if (!started_) {
            started_ = true;
            start_ns_ = now_ns;
        }
        last_ns_ = now_ns;
        return true;
    }
    [[nodiscard]] uint64_t since_start_us(uint64_t now_ns) const {
        return (now_ns - start_ns_) / 1000;
    }
    void write(const std::string &line) const { fn_(line); }

  private:
    Fn fn_;
    uint64_t interval_ns_ = 0;
    uint64_t start_ns_ = 0;
    uint64_t last_ns_ = 0;
    bool started_ = false;
};

} // namespace ohca::fabric
