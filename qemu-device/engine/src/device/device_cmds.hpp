// SPDX-License-Identifier: GPL-2.0-or-later
// The device's own commands: QUERY_DEVICE, QUERY_PORT, SET_PORT, ADD_GID,
// DEL_GID, ALLOC_UAR, DEALLOC_UAR and QUERY_STATS (programming manual
// section 4), MAD_IFC and SET_PORT_CAP to an InfiniBand port's agents
// (section 21) and an Ethernet port's pause and PFC setting, QUERY_PFC and
// SET_PFC (section 22). The object families and the Ethernet rings run
// their own; the command queue dispatches to all of them by opcode
// (cmdq.cpp).
#pragma once

#include "device/command.hpp"
#include "device/device_config.hpp"
#include "device/host.hpp"
#include "device/stats.hpp"
#include "device/uar_table.hpp"
#include "objects/event_sink.hpp"

namespace ohca {

class RawEth;
class WirePort;

class DeviceCommands {
  public:
    struct Deps {
        const Host &host;
        const DeviceConfig &cfg;
        WirePort &port;
        const Stats &stats;
        UarTable &uars;
        const UarRefs &uar_refs; // objects on each doorbell page
        const RawEth &raw;       // its counters (QUERY_STATS)
        EventSink &events;       // port changes a MAD caused
    };
    explicit DeviceCommands(const Deps &deps) : d_(deps) {}

    CmdResult cmd_query_device(const Command &cmd);
    CmdResult cmd_query_port(const Command &cmd);
    CmdResult cmd_set_port(const Command &cmd);
    CmdResult cmd_alloc_uar(const Command &cmd);
    CmdResult cmd_dealloc_uar(const Command &cmd);
    CmdResult cmd_add_gid(const Command &cmd);
    CmdResult cmd_del_gid(const Command &cmd);
    CmdResult cmd_query_stats(const Command &cmd);
    CmdResult cmd_mad_ifc(const Command &cmd);
    CmdResult cmd_set_port_cap(const Command &cmd);
    // DCQCN's parameters (transports/dcqcn.hpp), one per command.
    CmdResult cmd_cc_param(const Command &cmd);
    CmdResult cmd_query_pfc(const Command &cmd);
    CmdResult cmd_set_pfc(const Command &cmd);

  private:
    Deps d_;
};

} // namespace ohca
