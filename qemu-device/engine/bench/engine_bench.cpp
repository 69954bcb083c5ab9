// SPDX-License-Identifier: GPL-2.0-or-later
// Google Benchmark of the engine alone, with the shared test driver's fake
// host (guest memory in a std::map of regions, a vector as the wire): RC
// messages in loopback and over a fake wire between two engines, the cost
// of an idle engine pass by number of QPs, and CRC-32 throughput.
//
//   make engine-bench         full run (figures for docs/results.md)
//   make engine-bench-smoke   a few iterations of each, so it keeps building
#include "rdma_node.hpp"

#if __has_include("crc32.hpp")
#include "link/crc32.hpp"
#define OHCA_BENCH_CRC32 1
#endif
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"

#include <benchmark/benchmark.h>
#include <malloc.h>

#include <memory>
#include <vector>

namespace ohca::test {
namespace {

constexpr uint32_t kBuf = 1 << 20;
constexpr uint8_t kMtu1024 = 3;

// A case that could not do its work fails the program (the smoke run in
// make test relies on it); Google Benchmark itself exits 0.
bool g_failed = false;
void fail(benchmark::State &st, const char *why) {
    g_failed = true;
    st.SkipWithError(why);
}

// Two connected RC QPs: both on one node (loopback) or one on each of two
// nodes joined by the fake wire.
class Pair {
  public:
    explicit Pair(bool wire) : x_(1), y_(wire ? std::make_unique<RdmaNode>(2) : nullptr) {
        RdmaNode &ny = y();
        a_ = make_side(x_, kBuf, 8, {}, 10);
        b_ = make_side(ny, kBuf, 8, {}, 10);
        x_.connect(a_.qp, b_.qp.qpn, ny, kMtu1024);
        ny.connect(b_.qp, a_.qp.qpn, x_, kMtu1024);
        // The fake host logs every DMA write and trace event; QEMU keeps
        // neither (a trace event is a disabled tracepoint's test), so the
        // loop does not either (the wire's frames are still captured).
        for (RdmaNode *n : {&x_, &y()}) {
            n->host.keep_logs = false;
            n->host.write_log.clear();
            n->host.traces.clear();
        }
    }
    RdmaNode &x() { return x_; }
    RdmaNode &y() { return y_ ? *y_ : x_; }
    Side &a() { return a_; }
    Side &b() { return b_; }

    // Runs both engines (and the wire) until idle.
    void run() {
        if (y_) {
            pump(x_, *y_);
        } else {
            x_.process();
        }
    }

  private:
    RdmaNode x_;
    std::unique_ptr<RdmaNode> y_;
    Side a_, b_;
};

// DMA callbacks the engines made per item (dma_per_item counter): each is
// a pci_dma_read/write in QEMU.
class DmaCount {
  public:
    explicit DmaCount(Pair &p) : p_(p), start_(total()) {}
    void report(benchmark::State &st, int64_t items) const {
        if (items > 0) {
            st.counters["dma_per_item"] = static_cast<double>(total() - start_) / items;
        }
    }

  private:
    uint64_t total() const {
        uint64_t n = uint64_t{p_.x().host.dma_reads} + p_.x().host.dma_writes;
        if (&p_.y() != &p_.x()) {
            n += uint64_t{p_.y().host.dma_reads} + p_.y().host.dma_writes;
        }
        return n;
    }
    Pair &p_;
    uint64_t start_;
};

// 64-byte SENDs, a batch of 64 per doorbell; each completes on both sides.
void send64(benchmark::State &st, bool wire) {
    Pair p(wire);
    constexpr int kBatch = 64;
    const DmaCount dma(p);
    // The WQEs' SGE lists built once: the harness should cost what a
    // guest's posting does, not an allocation per WQE.
    std::vector<ohca_sge> rsge(1);
    // Polled into vectors kept across iterations, as a guest polls into
    // an array of its own (not an allocation per poll).
    std::vector<ohca_cqe> scqes;
    std::vector<ohca_cqe> rcqes;
    SendReq r;
    r.sges = {{p.a().buf, 64, p.a().key}};
    for (auto _ : st) {
        for (int i = 0; i < kBatch; ++i) {
            rsge[0] = {p.b().buf + 64ull * i, 64, p.b().key};
            p.y().post_recv(p.b().qp, 1, rsge);
        }
        for (int i = 0; i < kBatch; ++i) {
            p.x().post_send(p.a().qp, r, i + 1 == kBatch);
        }
        p.run();
        p.x().poll_into(p.a().scq, scqes);
        p.y().poll_into(p.b().rcq, rcqes);
        if (scqes.size() != kBatch || rcqes.size() != kBatch) {
            fail(st, "SENDs did not complete");
            break;
        }
    }
    st.SetItemsProcessed(st.iterations() * kBatch);
    st.SetBytesProcessed(st.iterations() * kBatch * 64);
    dma.report(st, st.iterations() * kBatch);
}

// One RDMA WRITE or READ of st.range(0) bytes per iteration.
void rdma(benchmark::State &st, bool wire, uint8_t opcode) {
    Pair p(wire);
    const auto len = static_cast<uint32_t>(st.range(0));
    const DmaCount dma(p);
    for (auto _ : st) {
        SendReq r;
        r.opcode = opcode;
        r.remote_addr = p.b().buf;
        r.rkey = p.b().key;
        r.sges = {{p.a().buf, len, p.a().key}};
        p.x().post_send(p.a().qp, r);
        p.run();
        auto c = p.x().poll(p.a().scq);
        if (c.size() != 1 || c[0].status != OHCA_CQE_SUCCESS) {
            fail(st, "RDMA operation did not complete");
            break;
        }
    }
    st.SetItemsProcessed(st.iterations());
    st.SetBytesProcessed(st.iterations() * int64_t{len});
    dma.report(st, st.iterations());
}

// One 64-byte DMA read through the engine's host callbacks into the fake
// host: the price of each DMA the cases above count.
void BM_FakeHostDma64(benchmark::State &st) {
    RdmaNode n(1);
    const ohca_engine_ops ops = FakeHost::ops();
    const uint64_t at = n.alloc(4096);
    std::array<uint8_t, 64> buf{};
    for (auto _ : st) {
        benchmark::DoNotOptimize(ops.dma_read(&n.host, at, buf.data(), buf.size()));
    }
}
BENCHMARK(BM_FakeHostDma64);

void BM_Send64Loopback(benchmark::State &st) {
    send64(st, false);
}
void BM_Send64Wire(benchmark::State &st) {
    send64(st, true);
}
void BM_WriteLoopback(benchmark::State &st) {
    rdma(st, false, OHCA_WR_RDMA_WRITE);
}
void BM_WriteWire(benchmark::State &st) {
    rdma(st, true, OHCA_WR_RDMA_WRITE);
}
void BM_ReadLoopback(benchmark::State &st) {
    rdma(st, false, OHCA_WR_RDMA_READ);
}
void BM_ReadWire(benchmark::State &st) {
    rdma(st, true, OHCA_WR_RDMA_READ);
}
BENCHMARK(BM_Send64Loopback);
BENCHMARK(BM_Send64Wire);
BENCHMARK(BM_WriteLoopback)->Arg(4096)->Arg(65536);
BENCHMARK(BM_WriteWire)->Arg(4096)->Arg(65536);
BENCHMARK(BM_ReadLoopback)->Arg(4096)->Arg(65536);
BENCHMARK(BM_ReadWire)->Arg(4096)->Arg(65536);

// The fake host's logs emptied and their storage given back.
void drop_logs(RdmaNode &n) {
    std::vector<std::pair<uint64_t, size_t>>().swap(n.host.write_log);
    std::vector<FakeHost::TraceEvent>().swap(n.host.traces);
}

// ohca_engine_process() with nothing to do, st.range(0) QPs in RTS (on a
// device offering that many). host_bytes_per_qp: the heap the device grew
// by per QP created and connected (malloc's count, tables included).
void BM_IdlePass(benchmark::State &st) {
    const auto nqp = static_cast<uint32_t>(st.range(0));
    RdmaNode n(1, false, 0, 10, std::max(nqp, OHCA_ENGINE_DEFAULT_MAX_QP));
    const uint32_t pd = n.create_pd();
    const CqInfo cq = n.create_cq(6);
    QpInfo first = n.create_idle_qp(pd, cq.cqn);
    n.connect(first, first.qpn, n, kMtu1024);
    drop_logs(n);
    const size_t heap0 = mallinfo2().uordblks;
    for (uint32_t i = 1; i < nqp; ++i) {
        QpInfo q = n.create_idle_qp(pd, cq.cqn);
        n.connect(q, q.qpn, n, kMtu1024);
    }
    n.process();
    drop_logs(n);
    const size_t heap1 = mallinfo2().uordblks;
    for (auto _ : st) {
        ohca_engine_process(n.e);
    }
    if (nqp > 1) {
        st.counters["host_bytes_per_qp"] =
            static_cast<double>(heap1 - std::min(heap0, heap1)) / (nqp - 1);
    }
}
BENCHMARK(BM_IdlePass)->Arg(1)->Arg(1024)->Arg(65536);

std::vector<uint8_t> crc_data(size_t n) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) {
        v[i] = static_cast<uint8_t>(i * 31 + 7);
    }
    return v;
}

template <class Fn> void crc(benchmark::State &st, Fn fn) {
    const auto d = crc_data(static_cast<size_t>(st.range(0)));
    uint32_t c = ~0u;
    for (auto _ : st) {
        c = fn(c, std::span<const uint8_t>(d));
        benchmark::DoNotOptimize(c);
    }
    st.SetBytesProcessed(st.iterations() * st.range(0));
}

void BM_Crc32Engine(benchmark::State &st) {
    crc(st, crc32_update); // what the ICRC uses
}
BENCHMARK(BM_Crc32Engine)->Arg(1024)->Arg(4096)->Arg(65536);

#ifdef OHCA_BENCH_CRC32
void BM_Crc32Slice8(benchmark::State &st) {
    crc(st, crc32::update_slice8);
}
void BM_Crc32Pclmul(benchmark::State &st) {
    if (!crc32::pclmul_supported()) {
        st.SkipWithError("no PCLMULQDQ on this CPU");
        return;
    }
    crc(st, crc32::update_pclmul);
}
BENCHMARK(BM_Crc32Slice8)->Arg(1024)->Arg(4096)->Arg(65536);
BENCHMARK(BM_Crc32Pclmul)->Arg(1024)->Arg(4096)->Arg(65536);
#endif

} // namespace
} // namespace ohca::test

int main(int argc, char **argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
        return 2;
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return ohca::test::g_failed ? 1 : 0;
}
