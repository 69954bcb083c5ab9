// SPDX-License-Identifier: GPL-2.0-or-later
#include "sched.hpp"

#include "rdma_objects.hpp"

namespace ohca {

void ReadyList::push(Qp &qp) {
    SchedHook &h = qp.sched;
    if (h.ready) {
        return;
    }
    h.ready = true;
    h.next = nullptr;
    h.prev = tail_;
    if (tail_ != nullptr) {
        tail_->sched.next = &qp;
    } else {
        head_ = &qp;
    }
    tail_ = &qp;
    ++size_;
}

Qp *ReadyList::pop() {
    Qp *qp = head_;
    if (qp != nullptr) {
        remove(*qp);
    }
    return qp;
}

void ReadyList::remove(Qp &qp) {
    SchedHook &h = qp.sched;
    if (!h.ready) {
        return;
    }
    (h.prev != nullptr ? h.prev->sched.next : head_) = h.next;
    (h.next != nullptr ? h.next->sched.prev : tail_) = h.prev;
    h.prev = nullptr;
    h.next = nullptr;
    h.ready = false;
    --size_;
}

void ReadyList::clear() {
    head_ = nullptr;
    tail_ = nullptr;
    size_ = 0;
}

uint64_t TimerHeap::earliest() const {
    return heap_.empty() ? 0 : heap_.front()->deadline_ns;
}

void TimerHeap::clear() {
    heap_.clear(); // keeps the reserved storage
}

void TimerHeap::place(size_t pos, Qp *qp) {
    heap_[pos] = qp;
    qp->sched.heap_pos = static_cast<uint32_t>(pos);
}

void TimerHeap::sift_up(size_t pos) {
    Qp *qp = heap_[pos];
    while (pos > 0) {
        const size_t parent = (pos - 1) / 2;
        if (heap_[parent]->deadline_ns <= qp->deadline_ns) {
            break;
        }
        place(pos, heap_[parent]);
        pos = parent;
    }
    place(pos, qp);
}

void TimerHeap::sift_down(size_t pos) {
    Qp *qp = heap_[pos];
    const size_t n = heap_.size();
    for (;;) {
        size_t child = 2 * pos + 1;
        if (child >= n) {
            break;
        }
        if (child + 1 < n && heap_[child + 1]->deadline_ns < heap_[child]->deadline_ns) {
            ++child;
        }
        if (qp->deadline_ns <= heap_[child]->deadline_ns) {
            break;
        }
        place(pos, heap_[child]);
        pos = child;
    }
    place(pos, qp);
}

void TimerHeap::erase(size_t pos) {
    Qp *gone = heap_[pos];
    Qp *last = heap_.back();
    heap_.pop_back();
    gone->sched.heap_pos = SchedHook::kNotInHeap;
    if (last != gone) {
        place(pos, last);
        sift_up(pos);
        sift_down(last->sched.heap_pos);
    }
}

void TimerHeap::set(Qp &qp, uint64_t deadline_ns) {
    const uint32_t pos = qp.sched.heap_pos;
    qp.deadline_ns = deadline_ns;
    if (pos == SchedHook::kNotInHeap) {
        if (deadline_ns != 0) {
            heap_.push_back(&qp); // within the reserved capacity: one per QP
            sift_up(heap_.size() - 1);
        }
        return;
    }
    if (deadline_ns == 0) {
        erase(pos);
        return;
    }
    sift_up(pos);
    sift_down(qp.sched.heap_pos);
}

} // namespace ohca
