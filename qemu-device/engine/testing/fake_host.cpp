// SPDX-License-Identifier: GPL-2.0-or-later
#include "fake_host.hpp"

#include "check.hpp"

#include <algorithm>
#include <cstdio>

namespace ohca::test {

void FakeHost::add_region(uint64_t base, size_t len) {
    Region r;
    r.owned.assign(len, 0);
    r.data = r.owned.data();
    r.size = len;
    regions_[base] = std::move(r);
    last_.region = nullptr;
}

void FakeHost::add_region(uint64_t base, std::span<uint8_t> storage) {
    Region r;
    r.data = storage.data();
    r.size = storage.size();
    regions_[base] = std::move(r);
    last_.region = nullptr;
}

void FakeHost::remove_region(uint64_t base) {
    regions_.erase(base);
    last_.region = nullptr;
}

uint8_t *FakeHost::find_in_map(uint64_t addr, size_t len) const {
    auto it = regions_.upper_bound(addr);
    if (it == regions_.begin()) {
        return nullptr;
    }
    --it;
    const uint64_t base = it->first;
    const size_t size = it->second.size;
    if (addr - base > size || len > size - (addr - base)) {
        return nullptr;
    }
    last_.region = &it->second;
    last_.base = base;
    return it->second.data + (addr - base);
}

bool FakeHost::contains(uint64_t addr, size_t len) const {
    return find(addr, len) != nullptr;
}

bool FakeHost::read(uint64_t addr, void *buf, size_t len) const {
    const uint8_t *p = find(addr, len);
    if (p == nullptr) {
        return false;
    }
    if (len != 0) {
        std::memcpy(buf, p, len);
    }
    return true;
}

bool FakeHost::write(uint64_t addr, const void *buf, size_t len) {
    uint8_t *p = find(addr, len);
    if (p == nullptr) {
        return false;
    }
    if (len != 0) {
        std::memcpy(p, buf, len);
    }
    return true;
}

void FakeHost::get_bytes(uint64_t addr, void *buf, size_t len) const {
    OHCA_CHECK(read(addr, buf, len),
               "test read outside memory at " + std::to_string(addr) + "+" + std::to_string(len));
}

void FakeHost::put_bytes(uint64_t addr, const void *buf, size_t len) {
    OHCA_CHECK(write(addr, buf, len),
               "test write outside memory at " + std::to_string(addr) + "+" + std::to_string(len));
}

void FakeHost::fill(uint64_t addr, uint8_t byte, size_t len) {
    uint8_t *p = find(addr, len);
    if (OHCA_CHECK(p != nullptr, "test fill outside memory at " + std::to_string(addr)) &&
        len != 0) {
        std::memset(p, byte, len);
    }
}

void FakeHost::set_hole(uint64_t lo, uint64_t hi, bool writes_only) {
    hole_lo_ = lo;
    hole_hi_ = hi;
    hole_writes_only_ = writes_only;
}

// Where the device's DMA of [addr, addr + len) lands in guest memory, or
// nullptr when it fails (outside memory, or into the hole): one lookup.
uint8_t *FakeHost::dma_target(uint64_t addr, size_t len, bool write) const {
    uint8_t *p = find(addr, len);
    if (p == nullptr || (hole_writes_only_ && !write)) {
        return p;
    }
    return hole_hi_ <= addr || addr + len <= hole_lo_ ? p : nullptr;
}

void FakeHost::check_dma(const char *what, uint64_t addr, const void *buf, size_t len) const {
    if (buf == nullptr || len == 0 || len > max_dma) {
        report_failure(__FILE__, __LINE__,
                       std::string("invariant violated: ") + what + " of " + std::to_string(len) +
                           " bytes at " + std::to_string(addr));
    }
}

int FakeHost::dma_read(uint64_t addr, void *buf, size_t len) {
    ++dma_reads;
    dma_began("dma_read", addr, buf, len);
    const uint8_t *p = dma_target(addr, len, false);
    if (p == nullptr) {
        ++dma_faults;
        if (strict) {
            std::memset(buf, 0xa5, len);
        }
        return -1;
    }
    std::memcpy(buf, p, len);
    return 0;
}

int FakeHost::dma_write(uint64_t addr, const void *buf, size_t len) {
    ++dma_writes;
    if (record && keep_logs) {
        write_log.emplace_back(addr, len);
    }
    dma_began("dma_write", addr, buf, len);
    uint8_t *p = dma_target(addr, len, true);
    if (p == nullptr) {
        ++dma_faults;
        if (strict) {
            volatile uint8_t sink = 0;
            for (size_t i = 0; i < len; ++i) {
                sink = sink ^ static_cast<const uint8_t *>(buf)[i];
            }
        }
        return -1;
    }
    std::memcpy(p, buf, len);
    return 0;
}

int FakeHost::dma_write_ordered(uint64_t addr, const void *buf, size_t len, size_t last_off,
                                size_t last_len) {
    ++dma_writes;
    ++ordered_writes;
    dma_began("dma_write_ordered", addr, buf, len);
    // One lookup for the whole range, then the rest before the last part,
    // as the QEMU glue stores them.
    uint8_t *r = dma_target(addr, len, true);
    if (r == nullptr) {
        ++dma_faults;
        return -1;
    }
    const auto *p = static_cast<const uint8_t *>(buf);
    const size_t after = last_off + last_len;
    std::memcpy(r, p, last_off);
    std::memcpy(r + after, p + after, len - after);
    if (record && keep_logs) {
        write_log.emplace_back(addr, last_off);
        if (len != after) {
            write_log.emplace_back(addr + after, len - after);
        }
    }
    std::memcpy(r + last_off, p + last_off, last_len);
    if (record && keep_logs) {
        write_log.emplace_back(addr + last_off, last_len);
    }
    return 0;
}

ohca_engine_ops FakeHost::ops() {
    ohca_engine_ops o{};
    o.dma_read = [](void *ctx, uint64_t addr, void *buf, size_t len) {
        return static_cast<FakeHost *>(ctx)->dma_read(addr, buf, len);
    };
    o.dma_write = [](void *ctx, uint64_t addr, const void *buf, size_t len) {
        return static_cast<FakeHost *>(ctx)->dma_write(addr, buf, len);
    };
    if (!ops_without_ordered_write) {
        o.dma_write_ordered = [](void *ctx, uint64_t addr, const void *buf, size_t len,
                                 size_t last_off, size_t last_len) {
            return static_cast<FakeHost *>(ctx)->dma_write_ordered(addr, buf, len, last_off,
                                                                   last_len);
        };
    }
    o.raise_irq = [](void *ctx, unsigned int vector) {
        auto *h = static_cast<FakeHost *>(ctx);
        if (h->strict && vector >= OHCA_NUM_MSIX) {
            report_failure(__FILE__, __LINE__,
                           "invariant violated: raise_irq(" + std::to_string(vector) + ")");
        }
        ++h->irq_count;
        if (h->record) {
            h->irqs.push_back(vector);
        }
    };
    o.transmit = [](void *ctx, const uint8_t *frame, size_t len) {
        auto *h = static_cast<FakeHost *>(ctx);
        if (h->strict &&
            (frame == nullptr || len < OHCA_ETH_MIN_FRAME || len > OHCA_ETH_MAX_FRAME)) {
            report_failure(__FILE__, __LINE__,
                           "invariant violated: transmit of " + std::to_string(len) + " bytes");
        }
        ++h->frames_out;
        if (h->record) {
            h->wire.emplace_back(frame, frame + len);
        } else {
            // Still read the frame, so ASan checks the engine's buffer.
            volatile uint8_t sink = 0;
            for (size_t i = 0; i < len; ++i) {
                sink = sink ^ frame[i];
            }
        }
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
        auto *h = static_cast<FakeHost *>(ctx);
        h->timer = deadline;
        if (h->timer_reschedules && deadline != 0) {
            ++h->schedules;
        }
    };
    o.trace = [](void *ctx, unsigned int kind, uint32_t a, uint32_t b, uint32_t c, uint64_t d) {
        auto *h = static_cast<FakeHost *>(ctx);
        if (h->record && h->keep_logs) {
            h->traces.push_back({kind, a, b, c, d});
        }
    };
    return o;
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
