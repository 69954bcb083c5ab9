// SPDX-License-Identifier: GPL-2.0-or-later
// The one writer of the switch's counters as JSON (stats_json of both
// cores, the datagram ports'): objects and arrays of named unsigned
// numbers, booleans and strings, ", " between members and ": " after a
// name, as the benches and tests read them. Names and strings are the
// program's own, so nothing is escaped.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace ohca::fabric {

class JsonWriter {
  public:
    explicit JsonWriter(std::string &out) : out_(out) {}

    // An object or array: a member of an array (no name) or of an object.
    void begin_object(const char *name = nullptr) { open(name, '{'); }
    void end_object() { close('}'); }
    void begin_array(const char *name = nullptr) { open(name, '['); }
    void end_array() { close(']'); }

    // Distinct names: a uint8_t would convert to bool as well as it does
    // to uint64_t.
    void num(const char *name, uint64_t v) {
        member(name);
        char buf[24];
        std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
        out_ += buf;
    }
    void flag(const char *name, bool v) {
        member(name);
        out_ += v ? "true" : "false";
    }
    void str(const char *name, const char *v) {
        member(name);
        out_ += '"';
        out_ += v;
        out_ += '"';
    }
    // 0x and 16 hex digits, as a string (a GUID).
    void hex64(const char *name, uint64_t v) {
        char buf[24];
        std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
        str(name, buf);
    }

  private:
    void open(const char *name, char bracket) {
        member(name);
        out_ += bracket;
        first_ = true;
    }
    void close(char bracket) {
        out_ += bracket;
        first_ = false;
    }
    // The separator before a member and its name.
    void member(const char *name) {
        if (!first_) {
            out_ += ", ";
        }
        first_ = false;
        if (name != nullptr) {
            out_ += '"';
            out_ += name;
            out_ += "\": ";
        }
    }

    std::string &out_;
    bool first_ = true;
};

} // namespace ohca::fabric
