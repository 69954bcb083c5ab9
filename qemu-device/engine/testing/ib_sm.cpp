// SPDX-License-Identifier: GPL-2.0-or-later
#include "ib_sm.hpp"

#include "check.hpp"

#include <algorithm>
#include <iterator>
#include <string>

namespace ohca::test {

ib::Smp smp(RdmaNode &n, uint8_t method, uint16_t attr, uint32_t mod, const ib::SmpData &data,
            uint32_t *result) {
    ib::Smp req;
    req.hdr.mgmt_class = ib::mgmt_class::SubnLidRouted;
    req.hdr.method = method;
    req.hdr.attr_id = attr;
    req.hdr.attr_mod = mod;
    req.hdr.tid = 7;
    req.data = data;
    return mad_ifc(n, req, 0, result);
}

ib::Smp mad_ifc(RdmaNode &n, const ib::Smp &req, uint16_t slid, uint32_t *result) {
    ib::Mad m{};
    req.write(m);
    ohca_mad_ifc_in in{};
    in.port = 1;
    in.flags = slid != 0 ? OHCA_MAD_IFC_NET : OHCA_MAD_IFC_IGNORE_MKEY;
    in.slid = slid;
    std::copy(m.begin(), m.end(), in.mad);
    ohca_mad_ifc_out out{};
    OHCA_CHECK_STATUS(n.cmd(OHCA_CMD_MAD_IFC, &in, sizeof(in), &out, sizeof(out)).status,
                      OHCA_STATUS_OK, "MAD_IFC");
    if (result != nullptr) {
        *result = out.result;
    }
    ib::Mad r{};
    std::copy(std::begin(out.mad), std::end(out.mad), r.begin());
    return ib::Smp::read(r);
}

ib::PortInfo port_info(RdmaNode &n) {
    return ib::PortInfo::read(smp(n, ib::method::Get, ib::attr::PortInfo, 1, {}).data);
}

uint16_t set_port_info(RdmaNode &n, const ib::PortInfo &pi) {
    ib::SmpData d{};
    pi.write(d);
    return smp(n, ib::method::Set, ib::attr::PortInfo, 1, d).status();
}

void sm_bring_up(RdmaNode &n, uint16_t lid) {
    ib::PortInfo pi = port_info(n);
    if (!OHCA_CHECK(pi.port_state == ib::port_state::Init,
                    "port state " + std::to_string(pi.port_state) + ", expected INIT")) {
        return;
    }
    pi.lid = lid;
    pi.master_sm_lid = 1;
    pi.port_state = ib::port_state::Armed;
    if (!OHCA_CHECK(set_port_info(n, pi) == 0, "PortInfo Set to ARMED refused")) {
        return;
    }
    pi = port_info(n);
    pi.port_state = ib::port_state::Active;
    OHCA_CHECK(set_port_info(n, pi) == 0, "PortInfo Set to ACTIVE refused");
    n.lid = lid;
}

} // namespace ohca::test
