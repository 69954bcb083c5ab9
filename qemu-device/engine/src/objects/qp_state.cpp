// SPDX-License-Identifier: GPL-2.0-or-later
#include "objects/qp_state.hpp"

namespace ohca {

QpTransition qp_transition(uint8_t cur, uint8_t next) {
    constexpr uint32_t kPath = OHCA_QP_PKEY_INDEX | OHCA_QP_PORT;
    if (cur > OHCA_QPS_ERR || next > OHCA_QPS_ERR) {
        return {};
    }
    if (next == OHCA_QPS_RESET || next == OHCA_QPS_ERR) {
        return {true, 0, 0}; // any state may go to RESET or ERR
    }
    switch (cur) {
    case OHCA_QPS_RESET:
        if (next == OHCA_QPS_INIT) {
            return {true, kPath | OHCA_QP_ACCESS_FLAGS, 0};
        }
        break;
    case OHCA_QPS_INIT:
        if (next == OHCA_QPS_INIT) {
            return {true, 0, kPath | OHCA_QP_ACCESS_FLAGS};
        }
        if (next == OHCA_QPS_RTR) {
            return {true,
                    OHCA_QP_AV | OHCA_QP_PATH_MTU | OHCA_QP_DEST_QPN | OHCA_QP_RQ_PSN |
                        OHCA_QP_MAX_DEST_RD_ATOMIC | OHCA_QP_MIN_RNR_TIMER,
                    OHCA_QP_PKEY_INDEX | OHCA_QP_ACCESS_FLAGS};
        }
        break;
    case OHCA_QPS_RTR:
        if (next == OHCA_QPS_RTS) {
            return {true,
                    OHCA_QP_SQ_PSN | OHCA_QP_TIMEOUT | OHCA_QP_RETRY_CNT | OHCA_QP_RNR_RETRY |
                        OHCA_QP_MAX_QP_RD_ATOMIC,
                    OHCA_QP_CUR_STATE | OHCA_QP_ACCESS_FLAGS | OHCA_QP_MIN_RNR_TIMER};
        }
        break;
    case OHCA_QPS_RTS:
        if (next == OHCA_QPS_RTS) {
            return {true, 0, OHCA_QP_CUR_STATE | OHCA_QP_ACCESS_FLAGS | OHCA_QP_MIN_RNR_TIMER};
        }
        if (next == OHCA_QPS_SQD) {
            return {true, 0, 0};
        }
        break;
    case OHCA_QPS_SQD:
        if (next == OHCA_QPS_RTS) {
            return {true, 0, OHCA_QP_CUR_STATE | OHCA_QP_ACCESS_FLAGS | OHCA_QP_MIN_RNR_TIMER};
        }
        if (next == OHCA_QPS_SQD) {
            return {true, 0,
                    OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_AV | OHCA_QP_TIMEOUT |
                        OHCA_QP_RETRY_CNT | OHCA_QP_RNR_RETRY | OHCA_QP_MAX_QP_RD_ATOMIC |
                        OHCA_QP_MAX_DEST_RD_ATOMIC | OHCA_QP_CUR_STATE | OHCA_QP_ACCESS_FLAGS |
                        OHCA_QP_MIN_RNR_TIMER};
        }
        break;
    case OHCA_QPS_SQE:
        if (next == OHCA_QPS_RTS) {
            return {true, 0, OHCA_QP_CUR_STATE | OHCA_QP_ACCESS_FLAGS};
        }
        break;
    default:
        break;
    }
    return {};
}

namespace {
bool mask_fits(const QpTransition &t, uint32_t attr_mask) {
    if (!t.valid) {
        return false;
    }
    const uint32_t m = attr_mask & ~uint32_t{OHCA_QP_STATE};
    return (m & t.required) == t.required && (m & ~(t.required | t.optional)) == 0;
}
} // namespace

bool qp_mask_ok(uint8_t cur, uint8_t next, uint32_t attr_mask) {
    return mask_fits(qp_transition(cur, next), attr_mask);
}

QpTransition ud_qp_transition(uint8_t cur, uint8_t next) {
    constexpr uint32_t kPath = OHCA_QP_PKEY_INDEX | OHCA_QP_PORT;
    if (cur > OHCA_QPS_ERR || next > OHCA_QPS_ERR) {
        return {};
    }
    if (next == OHCA_QPS_RESET || next == OHCA_QPS_ERR) {
        return {true, 0, 0};
    }
    switch (cur) {
    case OHCA_QPS_RESET:
        // PORT optional: the verbs' GSI column has no PORT (one port).
        if (next == OHCA_QPS_INIT) {
            return {true, OHCA_QP_PKEY_INDEX | OHCA_QP_QKEY, OHCA_QP_PORT};
        }
        break;
    case OHCA_QPS_INIT:
        if (next == OHCA_QPS_INIT) {
            return {true, 0, kPath | OHCA_QP_QKEY};
        }
        if (next == OHCA_QPS_RTR) {
            return {true, 0, OHCA_QP_PKEY_INDEX | OHCA_QP_QKEY};
        }
        break;
    case OHCA_QPS_RTR:
        if (next == OHCA_QPS_RTS) {
            return {true, OHCA_QP_SQ_PSN, OHCA_QP_CUR_STATE | OHCA_QP_QKEY};
        }
        break;
    case OHCA_QPS_RTS:
        if (next == OHCA_QPS_RTS) {
            return {true, 0, OHCA_QP_CUR_STATE | OHCA_QP_QKEY};
        }
        if (next == OHCA_QPS_SQD) {
            return {true, 0, 0};
        }
        break;
    case OHCA_QPS_SQD:
        if (next == OHCA_QPS_RTS) {
            return {true, 0, OHCA_QP_CUR_STATE | OHCA_QP_QKEY};
        }
        if (next == OHCA_QPS_SQD) {
            return {true, 0, OHCA_QP_PKEY_INDEX | OHCA_QP_QKEY};
        }
        break;
    case OHCA_QPS_SQE:
        if (next == OHCA_QPS_RTS) {
            return {true, 0, OHCA_QP_CUR_STATE | OHCA_QP_QKEY};
        }
        break;
    default:
        break;
    }
    return {};
}

bool ud_qp_mask_ok(uint8_t cur, uint8_t next, uint32_t attr_mask) {
    return mask_fits(ud_qp_transition(cur, next), attr_mask);
}

QpTransition uc_qp_transition(uint8_t cur, uint8_t next) {
    constexpr uint32_t kPath = OHCA_QP_PKEY_INDEX | OHCA_QP_PORT;
    constexpr uint32_t kLive = OHCA_QP_CUR_STATE | OHCA_QP_ACCESS_FLAGS;
    if (cur > OHCA_QPS_ERR || next > OHCA_QPS_ERR) {
        return {};
    }
    if (next == OHCA_QPS_RESET || next == OHCA_QPS_ERR) {
        return {true, 0, 0};
    }
    switch (cur) {
    case OHCA_QPS_RESET:
        if (next == OHCA_QPS_INIT) {
            return {true, kPath | OHCA_QP_ACCESS_FLAGS, 0};
        }
        break;
    case OHCA_QPS_INIT:
        if (next == OHCA_QPS_INIT) {
            return {true, 0, kPath | OHCA_QP_ACCESS_FLAGS};
        }
        if (next == OHCA_QPS_RTR) {
            return {true, OHCA_QP_AV | OHCA_QP_PATH_MTU | OHCA_QP_DEST_QPN | OHCA_QP_RQ_PSN,
                    OHCA_QP_PKEY_INDEX | OHCA_QP_ACCESS_FLAGS};
        }
        break;
    case OHCA_QPS_RTR:
        if (next == OHCA_QPS_RTS) {
            return {true, OHCA_QP_SQ_PSN, kLive};
        }
        break;
    case OHCA_QPS_RTS:
        if (next == OHCA_QPS_RTS) {
            return {true, 0, kLive};
        }
        if (next == OHCA_QPS_SQD) {
            return {true, 0, 0};
        }
        break;
    case OHCA_QPS_SQD:
        if (next == OHCA_QPS_RTS) {
            return {true, 0, kLive};
        }
        if (next == OHCA_QPS_SQD) {
            return {true, 0, kPath | OHCA_QP_AV | kLive};
        }
        break;
    case OHCA_QPS_SQE:
        if (next == OHCA_QPS_RTS) {
            return {true, 0, kLive};
        }
        break;
    default:
        break;
    }
    return {};
}

bool xrc_qp_mask_ok(uint8_t type, uint8_t cur, uint8_t next, uint32_t attr_mask) {
    QpTransition t = qp_transition(cur, next);
    uint32_t relaxed = 0;
    if (cur == OHCA_QPS_INIT && next == OHCA_QPS_RTR && type == OHCA_QPT_XRC_INI) {
        relaxed = OHCA_QP_MAX_DEST_RD_ATOMIC | OHCA_QP_MIN_RNR_TIMER;
    } else if (cur == OHCA_QPS_RTR && next == OHCA_QPS_RTS && type == OHCA_QPT_XRC_TGT) {
        relaxed = OHCA_QP_RETRY_CNT | OHCA_QP_RNR_RETRY | OHCA_QP_MAX_QP_RD_ATOMIC;
    }
    t.required &= ~relaxed;
    t.optional |= relaxed;
    return mask_fits(t, attr_mask);
}

bool raw_qp_mask_ok(uint8_t cur, uint8_t next, uint32_t attr_mask) {
    QpTransition t = qp_transition(cur, next);
    if (t.valid) {
        t.required = 0;
        t.optional = 0;
        if (cur == OHCA_QPS_RESET && next == OHCA_QPS_INIT) {
            t.required = OHCA_QP_PORT;
        } else if (cur == OHCA_QPS_INIT && next == OHCA_QPS_INIT) {
            t.optional = OHCA_QP_PORT;
        } else if (next != OHCA_QPS_RESET && next != OHCA_QPS_ERR) {
            t.optional = OHCA_QP_CUR_STATE;
        }
    }
    return mask_fits(t, attr_mask);
}

bool uc_qp_mask_ok(uint8_t cur, uint8_t next, uint32_t attr_mask) {
    return mask_fits(uc_qp_transition(cur, next), attr_mask);
}

} // namespace ohca
