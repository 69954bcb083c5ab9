// SPDX-License-Identifier: GPL-2.0-or-later
// A saved engine as the tests damage it (docs/migration.md's stream):
// where a section lies, and the checksum made right again after damage so
// that the loader's field checks, not the checksum, are what is tested.
#pragma once

#include "fake_host.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ohca::test {

struct StateSection {
    size_t at = 0;   // its header: 4-byte tag, 2-byte version, 4-byte length
    size_t body = 0; // its first field
    size_t len = 0;  // its fields' bytes
};

// Section 'tag' of stream 's'; at == s.size() when it has none.
StateSection state_section(const std::vector<uint8_t> &s, const char *tag);
// The CRC-32 at the end of 's' recomputed over the bytes before it.
void reseal_state(std::vector<uint8_t> &s);

// An engine of a node's configuration on a fake host of its own, to load
// damaged streams into.
class SpareEngine {
  public:
    explicit SpareEngine(const ohca_engine_config &cfg);
    ~SpareEngine();
    SpareEngine(const SpareEngine &) = delete;
    SpareEngine &operator=(const SpareEngine &) = delete;
    // "" when 's' loaded, otherwise the engine's reason.
    std::string load(const std::vector<uint8_t> &s);
    // What a loaded stream makes the engine do 'ns' later (timers, reposts);
    // its frames dropped.
    void run_after(uint64_t ns);

    FakeHost host;
    ohca_engine *e = nullptr;
};

} // namespace ohca::test
