//! The address ranges a batch of route changes touched: only nodes overlapping them are rebuilt.

use super::addr::AddrBits;

pub struct ChangedRanges<A> {
    /// Sorted, disjoint, non-adjacent-merged `[first, last]` ranges.
    ranges: Vec<(A, A)>,
}

impl<A: AddrBits> ChangedRanges<A> {
    pub fn new(mut ranges: Vec<(A, A)>) -> ChangedRanges<A> {
        ranges.sort_unstable();
        let mut merged: Vec<(A, A)> = Vec::with_capacity(ranges.len());
        for (first, last) in ranges {
            match merged.last_mut() {
                // Prefix ranges nest or are disjoint, so a range starting inside the previous one
                // lies within it.
                Some(prev) if first <= prev.1 => prev.1 = prev.1.max(last),
                _ => merged.push((first, last)),
            }
        }
        ChangedRanges { ranges: merged }
    }

    /// The changed ranges clipped to `[first, last]`.
    pub fn within(&self, first: A, last: A) -> impl Iterator<Item = (A, A)> + '_ {
        let start = self.ranges.partition_point(|r| r.1 < first);
        self.ranges[start..].iter().take_while(move |r| r.0 <= last).map(move |r| (r.0.max(first), r.1.min(last)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_and_clips() {
        let c = ChangedRanges::new(vec![(20u32, 29), (0, 9), (22, 23), (40, 49)]);
        assert_eq!(c.within(5, 25).collect::<Vec<_>>(), vec![(5, 9), (20, 25)]);
        assert_eq!(c.within(30, 39).count(), 0);
        assert_eq!(c.within(0, u32::MAX).count(), 3);
    }
}
