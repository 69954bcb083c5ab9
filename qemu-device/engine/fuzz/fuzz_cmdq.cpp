// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzzer (a): the command queue. The input is a ring configuration followed
// by a sequence of operations: batches of command entries (structured, so
// that most pass the entry checks and reach the commands' own fields; some
// raw), mailbox bytes, EQ doorbells (including none, to overflow EQ 0),
// DMA holes, resets and reconfiguration.
#include "fuzz_common.hpp"

using namespace ohca::fuzz;

namespace {

// Input sizes of the commands the engine knows today; unknown opcodes (the
// RDMA commands as they arrive) get a size from a list of common ones, and
// libFuzzer's comparison tracing finds the exact size quickly.
uint16_t natural_in_len(uint16_t op, Input &in) {
    switch (op) {
    case OHCA_CMD_NOP:
    case OHCA_CMD_QUERY_DEVICE:
    case OHCA_CMD_ALLOC_UAR:
    case OHCA_CMD_QUERY_STATS:
        return 0;
    case OHCA_CMD_QUERY_PORT:
        return sizeof(ohca_query_port_in);
    case OHCA_CMD_SET_PORT:
        return sizeof(ohca_set_port_in);
    case OHCA_CMD_CREATE_ETH_RING:
        return sizeof(ohca_create_eth_ring_in);
    case OHCA_CMD_DESTROY_ETH_RING:
        return sizeof(ohca_destroy_eth_ring_in);
    case OHCA_CMD_DEALLOC_UAR:
        return sizeof(ohca_dealloc_uar_in);
    case OHCA_CMD_ADD_GID:
        return sizeof(ohca_add_gid_in);
    case OHCA_CMD_DEL_GID:
        return sizeof(ohca_del_gid_in);
    default: {
        static const uint16_t common[] = {0, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 96, 128};
        return common[in.below(sizeof(common) / sizeof(common[0]))];
    }
    }
}

// A plausible input for `op`: bytes from the fuzz input, then fix-ups that
// make the usual first checks pass, then (sometimes) guest addresses
// planted in 8-byte aligned slots — commands that take rings, CQs, MRs
// carry addresses, and random bytes would never point into the arena.
void fill_input(Input &in, uint16_t op, uint8_t *buf, size_t len) {
    in.bytes(buf, len);
    const bool fix = !in.one_in(4);
    switch (op) {
    case OHCA_CMD_QUERY_PORT:
    case OHCA_CMD_SET_PORT:
        if (fix) {
            buf[0] = 1;
            std::memset(buf + 1, 0, 3);
        }
        if (op == OHCA_CMD_SET_PORT && fix && len >= 16) {
            buf[4] &= 3;
            std::memset(buf + 5, 0, 3);
        }
        break;
    case OHCA_CMD_CREATE_ETH_RING:
        if (fix && len >= 16) {
            buf[0] &= 1;
            buf[1] = static_cast<uint8_t>(2 + buf[1] % 11);
            std::memset(buf + 2, 0, 6);
            const uint64_t base = pick_addr(in, buf[0] == 0 ? kTxRing : kRxRing, 16);
            std::memcpy(buf + 8, &base, 8);
        }
        break;
    case OHCA_CMD_DESTROY_ETH_RING:
        if (fix && len >= 8) {
            buf[0] &= 1;
            std::memset(buf + 1, 0, 7);
        }
        break;
    case OHCA_CMD_DEALLOC_UAR:
        if (fix && len >= 8) {
            buf[1] = buf[2] = buf[3] = 0;
            std::memset(buf + 4, 0, 4);
        }
        break;
    case OHCA_CMD_ADD_GID:
        if (fix && len >= 32) {
            if (buf[19] & 1) { // IPv4-mapped
                std::memset(buf, 0, 10);
                buf[10] = buf[11] = 0xff;
                buf[19] = OHCA_GID_TYPE_ROCE_V2_IPV4;
            } else {
                buf[0] = 0xfe;
                buf[19] = OHCA_GID_TYPE_ROCE_V2_IPV6;
            }
            buf[16] &= 0x1f;
            buf[17] = 0;
            buf[18] = 1;
            buf[20] &= 0xfe;
            buf[21] |= 1;
            std::memset(buf + 28, 0, 4);
        }
        break;
    case OHCA_CMD_DEL_GID:
        if (fix && len >= 8) {
            buf[0] &= 0x1f;
            buf[1] = 0;
            buf[2] = 1;
            std::memset(buf + 3, 0, 5);
        }
        break;
    default:
        break;
    }
    if (len >= 8 && in.one_in(3)) {
        for (uint32_t k = in.range(1, 3); k > 0; --k) {
            const size_t off = 8 * in.below(static_cast<uint32_t>(len / 8));
            const uint64_t a = pick_addr(in, kScratch + 0x1000 * in.below(6), 64);
            std::memcpy(buf + off, &a, 8);
        }
    }
}

void decode_entry(Input &in, Driver &d) {
    ohca_cmd c{};
    if (in.one_in(8)) { // a raw entry
        in.bytes(&c, sizeof(c));
        d.post_entry(c);
        return;
    }
    const uint16_t op = in.one_in(16) ? in.u16() : static_cast<uint16_t>(in.below(OHCA_CMD_MAX));
    c.opcode = op;
    c.token = in.u16();
    c.status = 0xee;
    if (in.one_in(32)) {
        c.rsvd0 = in.u8();
    }
    if (in.one_in(32)) {
        c.rsvd1 = in.u16();
    }
    uint16_t in_len = natural_in_len(op, in);
    switch (in.below(16)) {
    case 0:
        in_len = static_cast<uint16_t>(in.below(4097 + 8));
        break;
    case 1:
        in_len = in.u16();
        break;
    case 2:
        in_len = static_cast<uint16_t>(in_len + in.range(0, 8) - 4); // off by a few
        break;
    default:
        break;
    }
    c.in_len = in_len;
    static uint8_t buf[OHCA_CMD_MAILBOX_MAX];
    const size_t real = std::min<size_t>(in_len, sizeof(buf));
    fill_input(in, op, buf, real);
    if (in_len <= OHCA_CMD_INLINE_MAX) {
        std::memcpy(c.inline_in, buf, real);
        if (in.one_in(8)) {
            c.in_addr = in.u64(); // must be ignored
        }
    } else {
        c.in_addr = pick_addr(in, kMailboxIn);
        if (Host::in_arena(c.in_addr, real)) {
            d.host().put_bytes(c.in_addr, buf, real);
        }
    }
    switch (in.below(8)) {
    case 0:
        c.out_len = 0;
        break;
    case 1:
        c.out_len = in.u16();
        break;
    case 2:
        c.out_len = static_cast<uint16_t>(in.below(64));
        break;
    default:
        c.out_len = 4096 >> in.below(8);
        break;
    }
    c.out_addr = c.out_len == 0 && !in.one_in(16) ? 0 : pick_addr(in, kMailboxOut);
    d.post_entry(c);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Input in(data, size);
    Host host;
    Driver d(host, !in.one_in(8));
    unsigned int cmdq_log = in.range(1, 10);
    unsigned int eq_log = in.range(2, kEqLogMax);
    d.bring_up(cmdq_log, eq_log);

    for (unsigned int ops = 0; !in.empty() && ops < 256; ++ops) {
        switch (in.below(16)) {
        default: { // a batch of entries, one doorbell
            const uint32_t n = in.range(1, std::min<uint32_t>(d.cmdq_size(), 8));
            for (uint32_t i = 0; i < n; ++i) {
                decode_entry(in, d);
            }
            if (in.one_in(16)) {
                d.wr(OHCA_REG_CMDQ_PI, in.one_in(2) ? in.u16() : in.u32());
            } else {
                d.ring_cmdq();
            }
            d.drain(in.range(1, 8));
            if (!in.one_in(8)) {
                d.consume_eq(!in.one_in(4));
            }
            break;
        }
        case 8: { // mailbox / scratch bytes
            const uint64_t at = kMailboxIn + in.below(0xa000);
            auto bytes = in.take(in.below(512));
            if (Host::in_arena(at, bytes.size())) {
                host.put_bytes(at, bytes.data(), bytes.size());
            }
            break;
        }
        case 9: // raw EQ doorbell
            d.wr(OHCA_REG_EQ0_DB, in.one_in(2) ? in.u32() : (in.u16() | OHCA_EQ_DB_ARM));
            break;
        case 10: { // a hole in guest memory (ring, EQ, mailbox, ...)
            if (in.one_in(2)) {
                host.clear_hole();
            } else {
                const uint64_t lo = kGuestBase + in.below(kGuestSize);
                host.set_hole(lo, lo + in.range(1, 0x2000), in.one_in(2));
            }
            break;
        }
        case 11: // reset and reconfigure
            cmdq_log = in.range(1, 10);
            eq_log = in.range(2, kEqLogMax);
            d.bring_up(cmdq_log, eq_log);
            break;
        case 12: // link change (PORT_CHANGE events)
            ohca_engine_set_link(d.engine(), in.flag());
            break;
        case 13: // garbage over the command ring or the EQ
            host.put<uint64_t>(kCmdq + 8 * in.below(0x2000), in.u64());
            break;
        case 14: { // re-entry from inside the next DMA
            const auto k = static_cast<Host::Reenter>(in.range(1, 7));
            host.arm_reentry(k, in.u32(), in.u32());
            break;
        }
        case 15:
            ohca_engine_reset(d.engine());
            d.bring_up(cmdq_log, eq_log);
            break;
        }
    }
    host.arm_reentry(Host::Reenter::None, 0, 0);
    d.check_recovers();
    return 0;
}
