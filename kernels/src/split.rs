//! Work split over several GPUs of one host: near-equal consecutive parts, one host thread
//! per device. Needs no GPU (the crates' multi-GPU backends build on it).

use std::ops::Range;

/// `len` items split into at most `parts` consecutive, non-empty ranges whose sizes differ by
/// at most one, the larger first: with `len = q parts + r`, the first `r` ranges hold `q + 1`
/// items and the others `q`. Fewer ranges come back when `len < parts` (one item each), none
/// when `len` or `parts` is zero.
///
/// ```
/// assert_eq!(kernels::even_parts(5, 3), [0..2, 2..4, 4..5]);
/// assert_eq!(kernels::even_parts(2, 4), [0..1, 1..2]);
/// ```
pub fn even_parts(len: usize, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.min(len);
    let mut start = 0;
    (0..parts)
        .map(|i| {
            let size = len / parts + usize::from(i < len % parts);
            start += size;
            start - size..start
        })
        .collect()
}

/// `run(item)` for every item at once, one scoped thread each (the calling thread waits), the
/// results in the items' order. A lone item runs on the calling thread, which saves a thread's
/// start (tens of microseconds) on small calls. A panic in any of them goes on in the caller
/// once every thread has finished.
///
/// ```
/// let doubled = kernels::on_each(&[1, 2, 3], |x| 2 * x);
/// assert_eq!(doubled, [2, 4, 6]);
/// ```
pub fn on_each<T: Sync, R: Send>(items: &[T], run: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if let [item] = items {
        return vec![run(item)];
    }
    let run = &run;
    std::thread::scope(|scope| {
        let threads: Vec<_> = items
            .iter()
            .map(|item| scope.spawn(move || run(item)))
            .collect();
        threads
            .into_iter()
            .map(|thread| {
                thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_parts_cover_every_item_once_in_near_equal_ranges() {
        for parts in 0..=9 {
            for len in (0..=40).chain([4095, 4096, 4097, 16_384]) {
                let ranges = even_parts(len, parts);
                assert_eq!(ranges.len(), parts.min(len), "{len} over {parts}");
                let mut next = 0;
                for range in &ranges {
                    assert_eq!(range.start, next, "{len} over {parts}: consecutive");
                    assert!(!range.is_empty(), "{len} over {parts}: no empty part");
                    next = range.end;
                }
                if parts > 0 {
                    assert_eq!(next, len, "{len} over {parts}: every item");
                }
                let sizes: Vec<usize> = ranges.iter().map(ExactSizeIterator::len).collect();
                assert!(
                    sizes.windows(2).all(|w| w[0] == w[1] || w[0] == w[1] + 1),
                    "{len} over {parts}: {sizes:?}"
                );
            }
        }
        assert_eq!(even_parts(usize::MAX, 3).len(), 3);
        assert_eq!(even_parts(usize::MAX, 3)[2].end, usize::MAX);
    }

    #[test]
    fn on_each_keeps_the_order_and_runs_at_once() {
        let barrier = std::sync::Barrier::new(4);
        // Every call waits for all four: they can only finish if they run at the same time.
        let out = on_each(&[3, 1, 4, 1], |&x| {
            barrier.wait();
            x * 10
        });
        assert_eq!(out, [30, 10, 40, 10]);
        assert!(on_each(&[] as &[u8], |_| 0).is_empty());
        let caller = std::thread::current().id();
        assert_eq!(
            on_each(&[5], |&x| (x, std::thread::current().id())),
            [(5, caller)]
        );
    }

    #[test]
    #[should_panic(expected = "part 2")]
    fn on_each_passes_a_panic_on() {
        on_each(&[1, 2, 3], |&x| assert_ne!(x, 2, "part {x}"));
    }
}
