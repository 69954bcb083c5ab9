// SPDX-License-Identifier: GPL-2.0-or-later
// The C boundary of the engine (ohca_engine.h). Nothing here may throw:
// the engine is built with -fno-exceptions and allocation failure yields
// NULL from ohca_engine_create().
#include "device/device.hpp"
#include "state/device_state.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

struct ohca_engine {
    ohca::Device device;
};

namespace ohca {
const Device &device_of(const ohca_engine *e) {
    return e->device;
}

ohca_engine *engine_create(const ohca_engine_ops *ops, void *ctx, const ohca_engine_config *cfg,
                           const LinkLayer *link) {
    if (ops == nullptr || cfg == nullptr || ops->dma_read == nullptr || ops->dma_write == nullptr ||
        ops->raise_irq == nullptr || ops->transmit == nullptr || ops->schedule == nullptr ||
        ops->rx_resume == nullptr || cfg->max_qp > OHCA_ENGINE_MAX_QP ||
        (cfg->speed_mbps != 0 && (cfg->speed_mbps < OHCA_ENGINE_MIN_SPEED_MBPS ||
                                  cfg->speed_mbps > OHCA_ENGINE_MAX_SPEED_MBPS)) ||
        (cfg->tx_burst_bytes != 0 && (cfg->tx_burst_bytes < OHCA_ENGINE_MIN_TX_BURST ||
                                      cfg->tx_burst_bytes > OHCA_ENGINE_MAX_TX_BURST)) ||
        (cfg->link_layer != OHCA_LINK_ETH && cfg->link_layer != OHCA_LINK_IB)) {
        return nullptr;
    }
    ohca::DeviceConfig dc;
    std::copy(std::begin(cfg->mac), std::end(cfg->mac), dc.mac.begin());
    dc.node_guid = cfg->node_guid;
    dc.sys_image_guid = cfg->sys_image_guid;
    dc.link_up = cfg->link_up;
    dc.id_seed = cfg->id_seed;
    dc.max_qp = cfg->max_qp != 0 ? cfg->max_qp : OHCA_ENGINE_DEFAULT_MAX_QP;
    dc.link = link;
    dc.link_layer = cfg->link_layer;
    dc.port_guid = cfg->port_guid;
    dc.speed_mbps = cfg->speed_mbps != 0 ? cfg->speed_mbps : OHCA_ENGINE_DEFAULT_SPEED_MBPS;
    dc.tx_burst_bytes = cfg->tx_burst_bytes;
    return new (std::nothrow) ohca_engine{ohca::Device(*ops, ctx, dc)};
}
} // namespace ohca

extern "C" {

struct ohca_engine *ohca_engine_create(const struct ohca_engine_ops *ops, void *ctx,
                                       const struct ohca_engine_config *cfg) {
    return ohca::engine_create(ops, ctx, cfg, nullptr);
}

void ohca_engine_destroy(struct ohca_engine *e) {
    delete e;
}

uint64_t ohca_engine_reg_read(struct ohca_engine *e, uint64_t offset, unsigned int size) {
    return e->device.reg_read(offset, size);
}

void ohca_engine_reg_write(struct ohca_engine *e, uint64_t offset, uint64_t value,
                           unsigned int size) {
    e->device.reg_write(offset, value, size);
}

void ohca_engine_db_write(struct ohca_engine *e, uint32_t page, uint32_t offset, uint64_t value,
                          unsigned int size) {
    e->device.db_write(page, offset, value, size);
}

void ohca_engine_doorbell_fast(struct ohca_engine *e, uint32_t page, uint32_t offset,
                               uint64_t value, unsigned int size, unsigned int budget) {
    e->device.doorbell_fast(page, offset, value, size, budget);
}

uint64_t ohca_engine_dm_read(struct ohca_engine *e, uint64_t offset, unsigned int size) {
    return e->device.memory_keys().dm_read(offset, size);
}

void ohca_engine_dm_write(struct ohca_engine *e, uint64_t offset, uint64_t value,
                          unsigned int size) {
    e->device.memory_keys().dm_write(offset, value, size);
}

enum ohca_engine_rx_result ohca_engine_receive_frame(struct ohca_engine *e, const uint8_t *frame,
                                                     size_t len) {
    if (frame == nullptr) {
        len = 0;
    }
    return e->device.receive_frame(std::span<const uint8_t>(frame, len));
}

void ohca_engine_set_link(struct ohca_engine *e, bool up) {
    e->device.set_link(up);
}

void ohca_engine_reset(struct ohca_engine *e) {
    e->device.reset();
}

void ohca_engine_process(struct ohca_engine *e) {
    e->device.process();
}

namespace {
void set_error(char *err, size_t err_len, const std::string &why) {
    if (err != nullptr && err_len != 0) {
        const size_t n = std::min(err_len - 1, why.size());
        std::memcpy(err, why.data(), n);
        err[n] = '\0';
    }
}
} // namespace

int ohca_engine_save(struct ohca_engine *e, uint8_t **buf, size_t *len, char *err, size_t err_len) {
    std::vector<uint8_t> out;
    std::string why;
    if (!ohca::DeviceState::save(e->device, out, why)) {
        set_error(err, err_len, why);
        return -1;
    }
    auto *p = static_cast<uint8_t *>(std::malloc(std::max<size_t>(out.size(), 1)));
    if (p == nullptr) {
        set_error(err, err_len, "out of memory");
        return -1;
    }
    std::memcpy(p, out.data(), out.size());
    *buf = p;
    *len = out.size();
    return 0;
}

void ohca_engine_state_free(uint8_t *buf) {
    std::free(buf);
}

int ohca_engine_load(struct ohca_engine *e, const uint8_t *buf, size_t len, char *err,
                     size_t err_len) {
    std::string why;
    if (buf == nullptr) {
        len = 0;
    }
    if (!ohca::DeviceState::load(e->device, std::span<const uint8_t>(buf, len), why)) {
        set_error(err, err_len, why);
        return -1;
    }
    return 0;
}

} // extern "C"
