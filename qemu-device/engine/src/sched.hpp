// SPDX-License-Identifier: GPL-2.0-or-later
// Readiness scheduling of QPs: the ready list (QPs with work: a rung SQ
// doorbell, responses or ACKs owed, a retransmission, a flush) and the timer
// heap (QPs with an armed ACK or RNR timer). Both are intrusive -- the links
// live in the QP -- so marking a QP ready, arming a timer and finding the
// next one cost O(1) or O(log n) and never allocate; an idle engine pass
// does not look at idle QPs at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ohca {

struct Qp;

// A QP's links. They belong to the scheduler: copying or assigning a Qp
// leaves the destination's links as they were (a QP reset in place stays
// where it is queued until the scheduler is told otherwise).
struct SchedHook {
    static constexpr uint32_t kNotInHeap = UINT32_MAX;
    SchedHook() = default;
    SchedHook(const SchedHook & /*unused*/) {}
    SchedHook &operator=(const SchedHook & /*unused*/) { return *this; }
    ~SchedHook() = default;

    Qp *prev = nullptr;
    Qp *next = nullptr;
    bool ready = false;
    uint32_t heap_pos = kNotInHeap;
};

// FIFO of ready QPs; a QP is in it at most once.
class ReadyList {
  public:
    void push(Qp &qp);
    Qp *pop();
    void remove(Qp &qp);
    void clear(); // forgets every QP (they are being freed)
    [[nodiscard]] bool empty() const { return head_ == nullptr; }
    [[nodiscard]] size_t size() const { return size_; }

  private:
    Qp *head_ = nullptr;
    Qp *tail_ = nullptr;
    size_t size_ = 0;
};

// Min-heap of QPs by Qp::deadline_ns (0 = no timer). Storage is reserved
// for every QP slot up front.
class TimerHeap {
  public:
    explicit TimerHeap(size_t capacity) { heap_.reserve(capacity); }
    // Sets qp.deadline_ns and its place in the heap.
    void set(Qp &qp, uint64_t deadline_ns);
    [[nodiscard]] Qp *top() const { return heap_.empty() ? nullptr : heap_.front(); }
    [[nodiscard]] uint64_t earliest() const;
    void clear();
    [[nodiscard]] size_t size() const { return heap_.size(); }

  private:
    void place(size_t pos, Qp *qp);
    void sift_up(size_t pos);
    void sift_down(size_t pos);
    void erase(size_t pos);
    std::vector<Qp *> heap_;
};

} // namespace ohca
