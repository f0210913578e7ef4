//! A fixed-capacity FIFO: every slot is allocated at once, when the ring is made or (a lazy
//! ring) when its first item arrives, so pushing and popping never allocate after that. The
//! scheduler uses it for its lists of backlogged VRs, and lazily for packet queues and each
//! VR's list of backlogged queues: thousands of idle VRs then hold no memory, and a rebuilt
//! plan does not allocate every queue of every VR again.

use core::mem::MaybeUninit;

/// Slots `head..head + len` (modulo the capacity) hold items; the rest are uninitialised, so
/// that a push writes its slot without first reading what was there.
pub(super) struct Ring<T> {
    /// Empty until a lazy ring's first push; then `capacity` long.
    slots: Box<[MaybeUninit<T>]>,
    capacity: usize,
    head: usize,
    len: usize,
}

impl<T> Ring<T> {
    pub(super) fn with_capacity(capacity: usize) -> Ring<T> {
        let mut r = Ring::lazy(capacity);
        r.allocate();
        r
    }

    /// A ring that allocates its `capacity` slots when its first item arrives.
    pub(super) fn lazy(capacity: usize) -> Ring<T> {
        Ring { slots: Box::default(), capacity, head: 0, len: 0 }
    }

    #[cold]
    fn allocate(&mut self) {
        self.slots = (0..self.capacity).map(|_| MaybeUninit::uninit()).collect();
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub(super) fn is_full(&self) -> bool {
        self.len == self.capacity
    }

    /// Appends `item`, or hands it back when the ring is full.
    #[inline]
    pub(super) fn push_back(&mut self, item: T) -> Result<(), T> {
        if self.is_full() {
            return Err(item);
        }
        if self.slots.is_empty() {
            self.allocate();
        }
        let tail = self.wrap(self.head + self.len);
        self.slots[tail].write(item);
        self.len += 1;
        Ok(())
    }

    #[inline]
    pub(super) fn front(&self) -> Option<&T> {
        if self.is_empty() {
            return None;
        }
        // SAFETY: a non-empty ring holds an item at `head`.
        Some(unsafe { self.slots[self.head].assume_init_ref() })
    }

    #[inline]
    pub(super) fn pop_front(&mut self) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        // SAFETY: a non-empty ring holds an item at `head`; moving `head` past it below makes
        // the slot uninitialised again, so the item is read out exactly once.
        let item = unsafe { self.slots[self.head].assume_init_read() };
        self.len -= 1;
        // An emptied ring starts over at its first slot: a queue that drains every round then
        // keeps using the same few cache lines instead of sweeping all its slots.
        self.head = if self.len == 0 { 0 } else { self.wrap(self.head + 1) };
        Some(item)
    }

    /// Starts loading the slot the next push writes (nothing for a lazy ring not yet used).
    #[inline(always)]
    pub(super) fn prefetch_tail(&self) {
        if !self.slots.is_empty() {
            crate::prefetch::prefetch(&self.slots[self.wrap(self.head + self.len)]);
        }
    }

    /// Moves the front item to the back: the round-robin step. Cheaper than pop + push because
    /// a full ring only needs its head index moved.
    #[inline]
    pub(super) fn rotate(&mut self) {
        if self.is_full() {
            self.head = self.wrap(self.head + 1);
        } else if let Some(item) = self.pop_front() {
            // Cannot fail: the pop just made room.
            let _ = self.push_back(item);
        }
    }

    /// `i` is below `2 * capacity` at every call site, so one subtraction replaces a modulo.
    #[inline]
    fn wrap(&self, i: usize) -> usize {
        if i >= self.slots.len() {
            i - self.slots.len()
        } else {
            i
        }
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        while self.pop_front().is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::Ring;

    #[test]
    fn keeps_fifo_order_across_the_wrap() {
        let mut r = Ring::with_capacity(3);
        for round in 0..5 {
            assert!(r.push_back(round * 10).is_ok());
            assert!(r.push_back(round * 10 + 1).is_ok());
            assert_eq!(r.pop_front(), Some(round * 10));
            assert_eq!(r.pop_front(), Some(round * 10 + 1));
        }
        assert!(r.is_empty());
        assert_eq!(r.pop_front(), None);
    }

    #[test]
    fn a_lazy_ring_holds_no_slots_until_its_first_push_and_then_its_capacity() {
        let mut r = Ring::lazy(3);
        assert!(r.slots.is_empty() && !r.is_full());
        assert_eq!(r.pop_front(), None);
        r.rotate();
        for i in 0..3 {
            assert!(r.push_back(i).is_ok());
        }
        assert_eq!(r.slots.len(), 3);
        assert_eq!(r.push_back(9), Err(9));
        r.rotate();
        assert_eq!([r.pop_front(), r.pop_front(), r.pop_front()], [Some(1), Some(2), Some(0)]);
        assert!(Ring::<u8>::lazy(0).push_back(1).is_err());
    }

    #[test]
    fn dropping_a_ring_drops_what_it_holds_once() {
        let item = std::rc::Rc::new(());
        let mut r = Ring::with_capacity(4);
        for _ in 0..3 {
            assert!(r.push_back(std::rc::Rc::clone(&item)).is_ok());
        }
        drop(r.pop_front());
        assert_eq!(std::rc::Rc::strong_count(&item), 3);
        drop(r);
        assert_eq!(std::rc::Rc::strong_count(&item), 1);
    }

    #[test]
    fn refuses_when_full_and_returns_the_item() {
        let mut r = Ring::with_capacity(2);
        assert!(r.push_back('a').is_ok());
        assert!(r.push_back('b').is_ok());
        assert_eq!(r.push_back('c'), Err('c'));
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn rotate_moves_the_front_to_the_back() {
        let mut full = Ring::with_capacity(3);
        let mut partial = Ring::with_capacity(5);
        for i in 1..=3 {
            assert!(full.push_back(i).is_ok());
            assert!(partial.push_back(i).is_ok());
        }
        for r in [&mut full, &mut partial] {
            r.rotate();
            assert_eq!(r.front(), Some(&2));
            let order: Vec<_> = std::iter::from_fn(|| r.pop_front()).collect();
            assert_eq!(order, [2, 3, 1]);
        }
    }
}
