//! The permutation rows of the report: SwapOrNot inverse in the Plinko GPU benchmark's
//! configuration, Sometimes-Recurse forward and inverse on random values, and the
//! whole-domain `P^-1` table, all over fresh keys.
//!
//! The table is over `2^25` on the GPU; on the CPU it is over `2^25` with [`Sizes::full`]
//! (minutes on 2 cores) and over `2^20` with [`Sizes::quick`]. Then the GPU also builds the
//! CPU's table, which must equal it, and its own is checked against single evaluations.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

use prp::{Cpu, Evaluator, Key, Keystream, SometimesRecurse, SwapOrNot};

use crate::progress::Progress;
use crate::table::{Check, Row, row};
use crate::{median_of, wall};

/// SwapOrNot inverse, `N = 2^17`, 759 rounds (the published Plinko GPU run's setting).
pub const SN_INVERSE: &str = "SwapOrNot inverse, N = 2^17, 759 rounds";
/// Sometimes-Recurse forward over `2^25`, lambda 128.
pub const SR_FORWARD: &str = "Sometimes-Recurse forward, N = 2^25";
/// Sometimes-Recurse inverse over `2^25`, lambda 128.
pub const SR_INVERSE: &str = "Sometimes-Recurse inverse, N = 2^25";
/// The Sometimes-Recurse domain of the forward and inverse rows and of the GPU's table.
const SR_DOMAIN_LOG2: u32 = 25;

/// The row of the whole-domain `P^-1` table of Sometimes-Recurse over `2^log2`.
pub fn sr_table(log2: u32) -> String {
    format!("Sometimes-Recurse P^-1 table, N = 2^{log2}")
}

/// Steps of [`cpu_rows`], one per measured row.
pub const CPU_STEPS: u64 = 4;
/// Steps of [`cuda_rows`], one per measured row.
pub const CUDA_STEPS: u64 = 4;

/// Batch sizes: the CPU's are what it finishes in seconds; the GPU's fill it.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Values of the CPU's SwapOrNot row (and of the GPU's check against it).
    pub cpu_sn_values: usize,
    /// Values of the CPU's Sometimes-Recurse rows (one ChaCha block per value per round).
    pub cpu_sr_values: usize,
    /// Values of every GPU batch row.
    pub gpu_values: usize,
    /// The CPU's table is over `2^cpu_table_log2` (at most 25; the GPU's is over `2^25`).
    pub cpu_table_log2: u32,
}

impl Sizes {
    /// Every table over `2^25`: minutes on 2 cores.
    pub fn full() -> Self {
        Self {
            cpu_sn_values: 1 << 20,
            cpu_sr_values: 1 << 10,
            gpu_values: 1 << 24,
            cpu_table_log2: SR_DOMAIN_LOG2,
        }
    }

    /// The CPU's table over `2^20`: seconds on 2 cores.
    pub fn quick() -> Self {
        Self {
            cpu_table_log2: 20,
            ..Self::full()
        }
    }
}

/// Keys, permutations and inputs shared by the CPU and GPU rows.
#[derive(Debug)]
#[cfg_attr(
    not(feature = "cuda"),
    allow(dead_code, reason = "read only by the CUDA rows")
)]
pub struct Workload {
    sizes: Sizes,
    swap_or_not: SwapOrNot,
    recurse: SometimesRecurse,
    /// The permutation of the CPU's table when its domain is smaller than `recurse`'s.
    small_table: Option<SometimesRecurse>,
    sn_inputs: Vec<u64>,
    sr_inputs: Vec<u64>,
}

/// `len` values below `domain` from a xorshift generator started at `seed` (a fixed seed in
/// the criterion bench, a fresh one in the report).
pub fn xorshift_values(seed: u64, len: usize, domain: u64) -> Vec<u64> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % domain
        })
        .collect()
}

/// Values below `domain` from a seed fresh for this process.
fn random_values(len: usize, domain: u64) -> Vec<u64> {
    xorshift_values(RandomState::new().build_hasher().finish(), len, domain)
}

fn fresh_key() -> Key {
    let words = random_values(4, u64::MAX);
    let mut bytes = [0u8; 32];
    for (chunk, word) in bytes.chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    Key::from(bytes)
}

impl Workload {
    /// Fresh keys and inputs.
    pub fn new(sizes: Sizes) -> Result<Self, prp::Error> {
        let small_table = (sizes.cpu_table_log2 < SR_DOMAIN_LOG2)
            .then(|| SometimesRecurse::new(fresh_key(), 1 << sizes.cpu_table_log2))
            .transpose()?;
        Ok(Self {
            sizes,
            swap_or_not: SwapOrNot::new(fresh_key(), 1 << 17, 759)?,
            recurse: SometimesRecurse::new(fresh_key(), 1 << SR_DOMAIN_LOG2)?,
            small_table,
            sn_inputs: random_values(sizes.gpu_values, 1 << 17),
            sr_inputs: random_values(sizes.gpu_values, 1 << SR_DOMAIN_LOG2),
        })
    }

    /// The permutation whose table the CPU builds.
    fn cpu_table(&self) -> &SometimesRecurse {
        self.small_table.as_ref().unwrap_or(&self.recurse)
    }
}

/// What the CPU rows computed, for checking the GPU against.
#[derive(Debug)]
#[cfg_attr(
    not(feature = "cuda"),
    allow(dead_code, reason = "read only by the CUDA rows")
)]
pub struct Reference {
    sn_inverse: Vec<u64>,
    sr_forward: Vec<u64>,
    sr_inverse: Vec<u64>,
    table: Vec<u32>,
}

fn values_row(
    primitive: &str,
    backend: &str,
    values: usize,
    time: std::time::Duration,
    check: Check,
) -> Row {
    row(primitive, backend, values as u64, "values", 0, time, check)
}

/// Runs the CPU rows (all threads); returns them with their outputs.
pub fn cpu_rows(work: &Workload, progress: &Progress) -> Result<(Vec<Row>, Reference), prp::Error> {
    let backend = Cpu.name();
    let mut rows = Vec::new();
    let batch = |prp: &dyn Fn(&mut Vec<u64>) -> Result<(), prp::Error>, inputs: &[u64]| {
        median_of(3, || {
            let mut values = inputs.to_vec();
            let ((), time) = wall(|| prp(&mut values))?;
            Ok::<_, prp::Error>((values, time))
        })
    };
    let sn_inputs = &work.sn_inputs[..work.sizes.cpu_sn_values];
    progress.step(SN_INVERSE, &backend);
    let (sn_inverse, time) = batch(&|v| Cpu.inverse_batch(&work.swap_or_not, v), sn_inputs)?;
    rows.push(values_row(
        SN_INVERSE,
        &backend,
        sn_inputs.len(),
        time,
        Check::Reference,
    ));
    let sr_inputs = &work.sr_inputs[..work.sizes.cpu_sr_values];
    progress.step(SR_FORWARD, &backend);
    let (sr_forward, time) = batch(&|v| Cpu.forward_batch(&work.recurse, v), sr_inputs)?;
    rows.push(values_row(
        SR_FORWARD,
        &backend,
        sr_inputs.len(),
        time,
        Check::Reference,
    ));
    progress.step(SR_INVERSE, &backend);
    let (sr_inverse, time) = batch(&|v| Cpu.inverse_batch(&work.recurse, v), sr_inputs)?;
    rows.push(values_row(
        SR_INVERSE,
        &backend,
        sr_inputs.len(),
        time,
        Check::Reference,
    ));
    let table_name = sr_table(work.sizes.cpu_table_log2);
    progress.step(&table_name, &backend);
    let (table, time) = wall(|| Cpu.inverse_table(work.cpu_table()))?;
    rows.push(values_row(
        &table_name,
        &backend,
        table.len(),
        time,
        Check::Reference,
    ));
    let reference = Reference {
        sn_inverse,
        sr_forward,
        sr_inverse,
        table,
    };
    Ok((rows, reference))
}

/// Runs the CUDA rows, values kept in device memory, and checks each against the CPU: the
/// CPU's inputs through the GPU must give the CPU's outputs, and the first timed outputs must
/// match single evaluations.
#[cfg(feature = "cuda")]
pub fn cuda_rows(
    cuda: &prp::Cuda,
    work: &Workload,
    reference: &Reference,
    progress: &Progress,
) -> Result<Vec<Row>, prp::Error> {
    use kernels::DeviceBuffer;
    use prp::Permutation;

    let gpu = cuda.gpu();
    let backend = cuda.name();
    let mut rows = Vec::new();
    type Batch<'a> = &'a dyn Fn(&mut DeviceBuffer<u64>) -> Result<(), prp::Error>;
    let timed = |run: Batch, inputs: &[u64]| {
        median_of(3, || {
            let mut device = gpu.upload(inputs)?;
            let ((), time) = gpu.time(|| run(&mut device))?;
            Ok::<_, prp::Error>((device.to_host()?, time))
        })
    };
    let same_prefix =
        |outputs: &[u64], single: &dyn Fn(u64) -> Result<u64, prp::Error>, inputs: &[u64]| {
            inputs
                .iter()
                .zip(outputs)
                .take(256)
                .try_fold(true, |same, (&x, &y)| {
                    Ok::<_, prp::Error>(same && single(x)? == y)
                })
        };

    let sn = &work.swap_or_not;
    progress.step(SN_INVERSE, &backend);
    let mut small = work.sn_inputs[..work.sizes.cpu_sn_values].to_vec();
    cuda.inverse_batch(sn, &mut small)?;
    let (out, time) = timed(&|d| cuda.inverse_batch_device(sn, d), &work.sn_inputs)?;
    let same =
        small == reference.sn_inverse && same_prefix(&out, &|x| sn.inverse(x), &work.sn_inputs)?;
    let check = Check::from_equal(same, "inverses differ from the CPU's");
    rows.push(values_row(SN_INVERSE, &backend, out.len(), time, check));

    let sr = &work.recurse;
    for (primitive, expected, inverse) in [
        (SR_FORWARD, &reference.sr_forward, false),
        (SR_INVERSE, &reference.sr_inverse, true),
    ] {
        progress.step(primitive, &backend);
        let mut small = work.sr_inputs[..work.sizes.cpu_sr_values].to_vec();
        let single = |x| {
            if inverse {
                sr.inverse(x)
            } else {
                sr.forward(x)
            }
        };
        if inverse {
            cuda.inverse_batch(sr, &mut small)?;
        } else {
            cuda.forward_batch(sr, &mut small)?;
        }
        let run = |d: &mut DeviceBuffer<u64>| match inverse {
            true => cuda.inverse_batch_device(sr, d),
            false => cuda.forward_batch_device(sr, d),
        };
        let (out, time) = timed(&run, &work.sr_inputs)?;
        let same = small == *expected && same_prefix(&out, &single, &work.sr_inputs)?;
        let check = Check::from_equal(same, "values differ from the CPU's");
        rows.push(values_row(primitive, &backend, out.len(), time, check));
    }

    // The table over 2^25: equal to the CPU's where the CPU built the same one; else the GPU
    // builds the CPU's smaller table too, and its own must match single evaluations.
    let table_name = sr_table(SR_DOMAIN_LOG2);
    progress.step(&table_name, &backend);
    let (table, time) = median_of(3, || gpu.time(|| cuda.inverse_table_device(sr)))?;
    let table = table.to_host()?;
    let same = match &work.small_table {
        None => table == reference.table,
        Some(small) => {
            let inputs = &work.sr_inputs[..256];
            cuda.inverse_table(small)? == reference.table
                && inputs.iter().try_fold(true, |same, &y| {
                    Ok::<_, prp::Error>(
                        same && Some(&(sr.inverse(y)? as u32)) == table.get(y as usize),
                    )
                })?
        }
    };
    let check = Check::from_equal(same, "table differs from the CPU's");
    rows.push(values_row(&table_name, &backend, table.len(), time, check));
    Ok(rows)
}
