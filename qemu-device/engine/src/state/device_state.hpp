// SPDX-License-Identifier: GPL-2.0-or-later
// The whole engine saved to and loaded from one byte stream
// (ohca_engine_save / ohca_engine_load; docs/migration.md). DeviceState
// orders the sections and saves the device's own registers; every other
// part is saved and loaded by its owner (save/load members). A load starts
// from the power-on state, checks the stream is of a device configured the
// same way, loads every section, checks the counts the objects keep of
// each other, and re-arms the timers; any failure leaves the device in its
// power-on state with the reason.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ohca {

class Device;

class DeviceState {
  public:
    // False with 'why' when the device cannot be saved now (called from
    // inside a host callback, an InfiniBand port, ODP MRs).
    static bool save(Device &d, std::vector<uint8_t> &out, std::string &why);
    static bool load(Device &d, std::span<const uint8_t> in, std::string &why);
};

} // namespace ohca
