// SPDX-License-Identifier: GPL-2.0-or-later
#include "fake_host.hpp"

#include <algorithm>

namespace ohca::test {

void FakeHost::add_region(uint64_t base, size_t len) {
    regions_[base] = std::vector<uint8_t>(len, 0);
}

void FakeHost::remove_region(uint64_t base) {
    regions_.erase(base);
}

std::vector<uint8_t> *FakeHost::find(uint64_t addr, size_t len, size_t &off) {
    auto it = regions_.upper_bound(addr);
    if (it == regions_.begin()) {
        return nullptr;
    }
    --it;
    const uint64_t base = it->first;
    const size_t size = it->second.size();
    if (addr - base > size || len > size - (addr - base)) {
        return nullptr;
    }
    off = static_cast<size_t>(addr - base);
    return &it->second;
}

bool FakeHost::read(uint64_t addr, void *buf, size_t len) {
    size_t off = 0;
    auto *r = find(addr, len, off);
    if (r == nullptr) {
        return false;
    }
    std::memcpy(buf, r->data() + off, len);
    return true;
}

bool FakeHost::write(uint64_t addr, const void *buf, size_t len) {
    size_t off = 0;
    auto *r = find(addr, len, off);
    if (r == nullptr) {
        return false;
    }
    std::memcpy(r->data() + off, buf, len);
    return true;
}

void FakeHost::fill(uint64_t addr, uint8_t byte, size_t len) {
    std::vector<uint8_t> v(len, byte);
    EXPECT_TRUE(write(addr, v.data(), len));
}

ohca_engine_ops FakeHost::ops() {
    ohca_engine_ops o{};
    o.dma_read = [](void *ctx, uint64_t addr, void *buf, size_t len) {
        auto *h = static_cast<FakeHost *>(ctx);
        ++h->dma_reads;
        if (h->on_dma) {
            h->on_dma();
        }
        return h->read(addr, buf, len) ? 0 : -1;
    };
    o.dma_write = [](void *ctx, uint64_t addr, const void *buf, size_t len) {
        auto *h = static_cast<FakeHost *>(ctx);
        ++h->dma_writes;
        h->write_log.emplace_back(addr, len);
        if (h->on_dma) {
            h->on_dma();
        }
        return h->write(addr, buf, len) ? 0 : -1;
    };
    if (!ops_without_ordered_write) {
        o.dma_write_ordered = [](void *ctx, uint64_t addr, const void *buf, size_t len,
                                 size_t last_off, size_t last_len) {
            auto *h = static_cast<FakeHost *>(ctx);
            ++h->dma_writes;
            ++h->ordered_writes;
            if (h->on_dma) {
                h->on_dma();
            }
            // One lookup for the whole range, then the rest before the
            // last part, as the QEMU glue stores them.
            size_t off = 0;
            std::vector<uint8_t> *r = h->find(addr, len, off);
            if (r == nullptr) {
                return -1;
            }
            const auto *p = static_cast<const uint8_t *>(buf);
            const size_t after = last_off + last_len;
            std::memcpy(r->data() + off, p, last_off);
            std::memcpy(r->data() + off + after, p + after, len - after);
            h->write_log.emplace_back(addr, last_off);
            if (len != after) {
                h->write_log.emplace_back(addr + after, len - after);
            }
            std::memcpy(r->data() + off + last_off, p + last_off, last_len);
            h->write_log.emplace_back(addr + last_off, last_len);
            return 0;
        };
    }
    o.raise_irq = [](void *ctx, unsigned int vector) {
        static_cast<FakeHost *>(ctx)->irqs.push_back(vector);
    };
    o.transmit = [](void *ctx, const uint8_t *frame, size_t len) {
        static_cast<FakeHost *>(ctx)->wire.emplace_back(frame, frame + len);
    };
    o.schedule = [](void *ctx) { ++static_cast<FakeHost *>(ctx)->schedules; };
    o.rx_resume = [](void *ctx) {
        auto *h = static_cast<FakeHost *>(ctx);
        ++h->rx_resumes;
        if (h->on_rx_resume) {
            h->on_rx_resume();
        }
    };
    o.now_ns = [](void *ctx) {
        auto *h = static_cast<FakeHost *>(ctx);
        h->now += h->now_step;
        return h->now;
    };
    o.set_timer = [](void *ctx, uint64_t deadline) {
        static_cast<FakeHost *>(ctx)->timer = deadline;
    };
    o.trace = [](void *ctx, unsigned int kind, uint32_t a, uint32_t b, uint32_t c, uint64_t d) {
        static_cast<FakeHost *>(ctx)->traces.push_back({kind, a, b, c, d});
    };
    return o;
}

// ---- EngineTest ----------------------------------------------------------

void EngineTest::SetUp() {
    host_.add_region(kEqBase, 16 * 65536); // EQ of the largest size
    host_.add_region(kCmdqBase, 64 * 1024);
    host_.add_region(kMailbox, 0x10000);
    host_.add_region(kTxRing, 0x10000);
    host_.add_region(kRxRing, 0x10000);
    host_.add_region(kBuffers, 0x100000);
    const ohca_engine_ops ops = FakeHost::ops();
    ohca_engine_config cfg{};
    std::copy(std::begin(kMac), std::end(kMac), cfg.mac);
    cfg.node_guid = kNodeGuid;
    cfg.sys_image_guid = kNodeGuid;
    cfg.link_up = true;
    e_ = ohca_engine_create(&ops, &host_, &cfg);
    ASSERT_NE(e_, nullptr);
}

void EngineTest::TearDown() {
    ohca_engine_destroy(e_);
}

void EngineTest::bring_up(unsigned int cmdq_log, unsigned int eq_log) {
    wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_RESET);
    ASSERT_EQ(rd(OHCA_REG_DEV_STATUS) & OHCA_DEV_STATUS_RESET_DONE, OHCA_DEV_STATUS_RESET_DONE);
    cmdq_log_ = cmdq_log;
    eq_log_ = eq_log;
    cmd_pi_ = 0;
    eq_ci_ = 0;
    host_.fill(kEqBase, 0, 16u << eq_log);
    wr(OHCA_REG_EQ0_BASE_LO, static_cast<uint32_t>(kEqBase));
    wr(OHCA_REG_EQ0_BASE_HI, 0);
    wr(OHCA_REG_EQ0_LOG_SIZE, eq_log);
    wr(OHCA_REG_EQ0_DB, OHCA_EQ_DB_ARM);
    wr(OHCA_REG_CMDQ_BASE_LO, static_cast<uint32_t>(kCmdqBase));
    wr(OHCA_REG_CMDQ_BASE_HI, 0);
    wr(OHCA_REG_CMDQ_LOG_SIZE, cmdq_log);
    wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_ENABLE);
    ASSERT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_READY});
}

void EngineTest::post_raw(const ohca_cmd &c) {
    const uint32_t slot = cmd_pi_ & ((1u << cmdq_log_) - 1);
    host_.put(kCmdqBase + 64ull * slot, c);
    ++cmd_pi_;
}

uint32_t EngineTest::ring_cmdq() {
    wr(OHCA_REG_CMDQ_PI, cmd_pi_ & 0xffff);
    return cmd_pi_;
}

void EngineTest::drain() {
    for (int i = 0; i < 1000; ++i) {
        const unsigned int before = host_.schedules;
        ohca_engine_process(e_);
        if (host_.schedules == before) {
            return;
        }
    }
    ADD_FAILURE() << "engine keeps rescheduling";
}

CmdOutcome EngineTest::cmd(uint16_t opcode, const void *in, uint16_t in_len, uint16_t out_len,
                           uint64_t out_addr) {
    ohca_cmd c{};
    c.opcode = opcode;
    c.token = ++token_;
    c.status = 0xee; // the device must overwrite it
    c.syndrome = 0xdeadbeef;
    c.in_len = in_len;
    c.out_len = out_len;
    c.out_addr = out_addr;
    if (in_len <= OHCA_CMD_INLINE_MAX) {
        if (in != nullptr) {
            std::memcpy(c.inline_in, in, in_len);
        }
    } else {
        c.in_addr = kMailbox;
        EXPECT_TRUE(host_.write(kMailbox, in, in_len));
    }
    const uint32_t slot = cmd_pi_ & ((1u << cmdq_log_) - 1);
    post_raw(c);
    ring_cmdq();
    drain();
    EXPECT_EQ(rd(OHCA_REG_CMDQ_CI), cmd_pi_ & 0xffff);
    const auto done = host_.get<ohca_cmd>(kCmdqBase + 64ull * slot);
    ohca_eqe eqe{};
    EXPECT_TRUE(next_eqe(eqe));
    EXPECT_EQ(eqe.type, OHCA_EQE_CMD_DONE);
    EXPECT_EQ(eqe.code, done.status);
    EXPECT_EQ(eqe.param0, c.token);
    EXPECT_EQ(eqe.param1, done.syndrome);
    EXPECT_EQ(eqe.param2, slot);
    eq_doorbell(true);
    return {done.status, done.syndrome};
}

bool EngineTest::next_eqe(ohca_eqe &out) {
    const uint32_t size = 1u << eq_log_;
    const auto e = host_.get<ohca_eqe>(kEqBase + 16ull * (eq_ci_ & (size - 1)));
    const uint8_t want = ((eq_ci_ >> eq_log_) & 1) == 0 ? OHCA_EQE_OWNER : 0;
    if ((e.flags & OHCA_EQE_OWNER) != want) {
        return false;
    }
    out = e;
    ++eq_ci_;
    return true;
}

ohca_query_stats_out EngineTest::stats() {
    ohca_query_stats_out s{};
    EXPECT_EQ(cmd_out(OHCA_CMD_QUERY_STATS, s).status, OHCA_STATUS_OK);
    return s;
}

void EngineTest::create_ring(uint8_t type, uint8_t log_size, uint64_t base) {
    ohca_create_eth_ring_in in{};
    in.type = type;
    in.log_size = log_size;
    in.base = base;
    ASSERT_EQ(cmd_in(OHCA_CMD_CREATE_ETH_RING, in).status, OHCA_STATUS_OK);
    if (type == OHCA_ETH_RING_TX) {
        tx_size_ = 1u << log_size;
        tx_pi_ = 0;
    } else {
        rx_size_ = 1u << log_size;
        rx_pi_ = 0;
    }
}

void EngineTest::post_tx(const std::vector<uint8_t> &frame) {
    const uint64_t buf = tx_buf(tx_pi_);
    if (!frame.empty()) {
        EXPECT_TRUE(host_.write(buf, frame.data(), frame.size()));
    }
    ohca_eth_desc d{};
    d.addr = buf;
    d.len = static_cast<uint16_t>(frame.size());
    host_.put(kTxRing + 16ull * (tx_pi_ % tx_size_), d);
    ++tx_pi_;
    wr(OHCA_REG_ETH_TX_PI, tx_pi_ & 0xffff);
}

void EngineTest::post_rx(uint16_t buf_len) {
    ohca_eth_desc d{};
    d.addr = rx_buf(rx_pi_);
    d.len = buf_len;
    host_.put(kRxRing + 16ull * (rx_pi_ % rx_size_), d);
    ++rx_pi_;
    wr(OHCA_REG_ETH_RX_PI, rx_pi_ & 0xffff);
}

// ---- frames --------------------------------------------------------------

std::vector<uint8_t> eth_frame(const uint8_t dst[6], uint16_t ethertype, size_t len) {
    std::vector<uint8_t> f(std::max<size_t>(len, 14), 0);
    std::copy(dst, dst + 6, f.begin());
    const uint8_t src[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x99};
    std::copy(src, src + 6, f.begin() + 6);
    f[12] = static_cast<uint8_t>(ethertype >> 8);
    f[13] = static_cast<uint8_t>(ethertype);
    for (size_t i = 14; i < f.size(); ++i) {
        f[i] = static_cast<uint8_t>(i);
    }
    return f;
}

std::vector<uint8_t> udp4_frame(const uint8_t dst[6], uint16_t dport, size_t payload) {
    auto f = eth_frame(dst, 0x0800, 14 + 20 + 8 + payload);
    uint8_t *ip = f.data() + 14;
    std::memset(ip, 0, 28);
    ip[0] = 0x45;
    const auto tot = static_cast<uint16_t>(20 + 8 + payload);
    ip[2] = static_cast<uint8_t>(tot >> 8);
    ip[3] = static_cast<uint8_t>(tot);
    ip[6] = 0x40; // DF
    ip[8] = 64;
    ip[9] = 17;
    uint8_t *udp = ip + 20;
    udp[0] = 0xc0;
    udp[1] = 0x00;
    udp[2] = static_cast<uint8_t>(dport >> 8);
    udp[3] = static_cast<uint8_t>(dport);
    return f;
}

std::vector<uint8_t> udp6_frame(const uint8_t dst[6], uint16_t dport, size_t payload) {
    auto f = eth_frame(dst, 0x86dd, 14 + 40 + 8 + payload);
    uint8_t *ip = f.data() + 14;
    std::memset(ip, 0, 48);
    ip[0] = 0x60;
    ip[6] = 17;
    ip[7] = 64;
    uint8_t *udp = ip + 40;
    udp[2] = static_cast<uint8_t>(dport >> 8);
    udp[3] = static_cast<uint8_t>(dport);
    return f;
}

} // namespace ohca::test
