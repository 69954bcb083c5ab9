// SPDX-License-Identifier: GPL-2.0-or-later
// Readiness scheduling of QPs: the ready list (QPs with work: a rung SQ
// doorbell, responses or ACKs owed, a retransmission, a flush) and the timer
// heaps (QPs with an armed ACK or RNR timer, CQs holding a moderated
// completion event). All are intrusive -- the links live in the object --
// so marking a QP ready, arming a timer and finding the next one cost O(1)
// or O(log n) and never allocate; an idle engine pass does not look at
// idle QPs or CQs at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ohca {

struct Qp;

// The place of an object in a TimerHeap. Like SchedHook it belongs to the
// heap: copying or assigning the object leaves the destination's place.
struct HeapHook {
    static constexpr uint32_t kNotInHeap = UINT32_MAX;
    HeapHook() = default;
    HeapHook(const HeapHook & /*unused*/) {}
    // Assigns nothing, so self-assignment is harmless.
    // NOLINTNEXTLINE(bugprone-unhandled-self-assignment,cert-oop54-cpp)
    HeapHook &operator=(const HeapHook & /*unused*/) { return *this; }
    ~HeapHook() = default;
    uint32_t pos = kNotInHeap;
};

// A QP's pacer wake-up (DCQCN, transports/dcqcn.hpp) in the run loop's
// pace heap: separate from the ACK and RNR timer, which it never delays.
struct PaceSlot {
    uint64_t deadline_ns = 0;
    Qp *qp = nullptr; // set when armed
    HeapHook hook;
};

// A QP's links. They belong to the scheduler: copying or assigning a Qp
// leaves the destination's links as they were (a QP reset in place stays
// where it is queued until the scheduler is told otherwise).
struct SchedHook {
    SchedHook() = default;
    SchedHook(const SchedHook & /*unused*/) {}
    // NOLINTNEXTLINE(bugprone-unhandled-self-assignment,cert-oop54-cpp): as HeapHook's
    SchedHook &operator=(const SchedHook & /*unused*/) { return *this; }
    ~SchedHook() = default;

    Qp *prev = nullptr;
    Qp *next = nullptr;
    bool ready = false;
    uint8_t list = 0; // an InfiniBand port's: the VL list it is in (vl_arbiter.hpp)
    HeapHook timer;   // place in the QP timer heap
    PaceSlot pace;    // place in the pace heap
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

// Min-heap of objects by their deadline_ns (0 = no timer): QPs (ACK and
// RNR timers) and CQs (completion event moderation). T has a uint64_t
// deadline_ns and a HeapHook reached through heap_hook(T &). Storage is
// reserved for every object slot up front, so arming a timer never
// allocates.
template <class T> class TimerHeap {
  public:
    explicit TimerHeap(size_t capacity) { heap_.reserve(capacity); }
    // Sets obj.deadline_ns and its place in the heap.
    void set(T &obj, uint64_t deadline_ns);
    [[nodiscard]] T *top() const { return heap_.empty() ? nullptr : heap_.front(); }
    // Inline: every run asks each heap (mostly empty) for it.
    [[nodiscard]] uint64_t earliest() const {
        return heap_.empty() ? 0 : heap_.front()->deadline_ns;
    }
    void clear();
    [[nodiscard]] size_t size() const { return heap_.size(); }

  private:
    void place(size_t pos, T *obj);
    void sift_up(size_t pos);
    void sift_down(size_t pos);
    void erase(size_t pos);
    std::vector<T *> heap_;
};

struct Cq;
HeapHook &heap_hook(Qp &qp);
HeapHook &heap_hook(Cq &cq);
inline HeapHook &heap_hook(PaceSlot &p) {
    return p.hook;
}
extern template class TimerHeap<Qp>;
extern template class TimerHeap<Cq>;
extern template class TimerHeap<PaceSlot>;

} // namespace ohca
