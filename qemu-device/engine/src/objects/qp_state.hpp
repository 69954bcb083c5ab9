// SPDX-License-Identifier: GPL-2.0-or-later
// The IBTA RC QP state diagram: which transitions exist and which attributes
// each requires or allows (the rules of the verbs' modify QP).
#pragma once

#include <ohca/ohca_cmd.h>

#include <cstdint>

namespace ohca {

struct QpTransition {
    bool valid = false;
    uint32_t required = 0;
    uint32_t optional = 0;
};

// The sets are those of the verbs' ib_modify_qp_is_ok() for RC (without
// alternate paths and path migration, which the device does not support),
// so whatever the kernel's check lets through the device accepts.
// Rules for cur -> next (states enum ohca_qp_state); OHCA_QP_STATE and
// OHCA_QP_CUR_STATE are handled by the caller.
QpTransition qp_transition(uint8_t cur, uint8_t next);

// Whether attr_mask is acceptable for cur -> next.
bool qp_mask_ok(uint8_t cur, uint8_t next, uint32_t attr_mask);

// The same for UD and GSI QPs (the verbs' UD column): Q_Key instead of
// the connection attributes.
QpTransition ud_qp_transition(uint8_t cur, uint8_t next);
// And for UC QPs (the verbs' UC column): the path and PSNs, no ACK
// timing, retries or RDMA READ/atomic resources.
QpTransition uc_qp_transition(uint8_t cur, uint8_t next);
bool uc_qp_mask_ok(uint8_t cur, uint8_t next, uint32_t attr_mask);
bool ud_qp_mask_ok(uint8_t cur, uint8_t next, uint32_t attr_mask);
// XRC initiator and target QPs (the verbs' XRC_INI and XRC_TGT columns):
// RC's transitions and attributes, with fewer of them required -- an
// initiator has no receive side, a target no send side.
// Raw Ethernet (the verbs' RAW_PACKET column): RESET->INIT needs the port,
// INIT->INIT may name it, every other transition takes no attribute.
bool raw_qp_mask_ok(uint8_t cur, uint8_t next, uint32_t attr_mask);
bool xrc_qp_mask_ok(uint8_t type, uint8_t cur, uint8_t next, uint32_t attr_mask);

} // namespace ohca
