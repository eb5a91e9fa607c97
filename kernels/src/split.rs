//! Work split over several GPUs of one host: near-equal consecutive parts, one host thread
//! per device. Needs no GPU (the crates' multi-GPU backends build on it).

use std::ops::Range;
use std::sync::Mutex;

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

/// [`even_parts`] with no part shorter than `min_len` where that can be had: `len` items in
/// at most `parts` ranges, fewer when the items would fill fewer ranges of `min_len` (always
/// one range for `0 < len < min_len`), so that work too small to pay for another GPU stays on
/// fewer.
///
/// ```
/// assert_eq!(kernels::even_parts_of_at_least(10, 4, 4), [0..5, 5..10]);
/// assert_eq!(kernels::even_parts_of_at_least(3, 4, 4), [0..3]);
/// ```
pub fn even_parts_of_at_least(len: usize, parts: usize, min_len: usize) -> Vec<Range<usize>> {
    even_parts(len, parts.min(len / min_len.max(1)).max(1))
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

/// `run(j, part)` for consecutive parts of `data`, part `j` the next `lens[j]` entries, all at
/// once as [`on_each`] (results in the parts' order): how a multi-GPU backend fills its
/// output, each GPU its own part. The lengths must not add up to more than `data.len()`.
///
/// ```
/// let mut data = [0u32; 5];
/// let firsts = kernels::on_each_part(&mut data, &[2, 3], |j, part| {
///     part.fill(j as u32 + 1);
///     part.len()
/// });
/// assert_eq!((firsts, data), (vec![2, 3], [1, 1, 2, 2, 2]));
/// ```
///
/// # Panics
///
/// When the lengths add up to more than `data.len()`.
pub fn on_each_part<T: Send, R: Send>(
    data: &mut [T],
    lens: &[usize],
    run: impl Fn(usize, &mut [T]) -> R + Sync,
) -> Vec<R> {
    let mut parts = Vec::with_capacity(lens.len());
    let mut rest = data;
    for (j, &len) in lens.iter().enumerate() {
        let (part, tail) = rest.split_at_mut(len);
        parts.push((j, Mutex::new(part)));
        rest = tail;
    }
    on_each(&parts, |(j, part)| {
        run(*j, &mut part.lock().unwrap_or_else(|p| p.into_inner()))
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
    fn parts_of_at_least_keep_their_minimum_where_they_can() {
        for parts in 1..=5 {
            for min_len in [1, 3, 4096] {
                for len in (0..=20).chain([4095, 4096, 8191, 8192, 20_000]) {
                    let ranges = even_parts_of_at_least(len, parts, min_len);
                    let count = parts.min(len / min_len).max(1).min(len);
                    assert_eq!(
                        ranges,
                        even_parts(len, count),
                        "{len} / {parts} / {min_len}"
                    );
                    if ranges.len() > 1 {
                        assert!(ranges.iter().all(|r| r.len() >= min_len));
                    }
                    // One part more would have been too short.
                    if ranges.len() < parts.min(len) {
                        assert!(len / (ranges.len() + 1) < min_len, "{len} / {parts}");
                    }
                }
            }
        }
        assert_eq!(even_parts_of_at_least(7, 3, 0), even_parts(7, 3));
    }

    #[test]
    fn on_each_part_gives_each_run_its_own_part() {
        let mut data: Vec<usize> = vec![0; 10];
        let barrier = std::sync::Barrier::new(3);
        let lens = on_each_part(&mut data, &[4, 0, 5], |j, part| {
            barrier.wait(); // all three at once
            part.iter_mut().for_each(|x| *x = j + 1);
            part.len()
        });
        assert_eq!(lens, [4, 0, 5]);
        assert_eq!(
            data,
            [1, 1, 1, 1, 3, 3, 3, 3, 3, 0],
            "the tail past the parts untouched"
        );
    }

    #[test]
    #[should_panic]
    fn on_each_part_refuses_parts_past_the_end() {
        on_each_part(&mut [0u8; 3], &[2, 2], |_, _| ());
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
