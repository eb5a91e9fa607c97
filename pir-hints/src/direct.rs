//! Hints straight from the definition, one at a time: the oracle that `verify` and the tests
//! hold generated hints against. Subsets by a full sort; Plinko offsets by evaluating
//! `F(K[a], j)` forward, never through `F^-1`.

use std::ops::Range;

use prp::Key;
use rayon::prelude::*;

use crate::cpu::xor_entry;
use crate::database::Database;
use crate::error::Error;
use crate::keys::MasterKey;
use crate::params::{Params, Scheme};
use crate::subset::{extra_rank, rms24_offset_unchecked, select_values};

/// One hint as the definition gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HintValue {
    /// The hint number `j`.
    pub hint: u64,
    /// Whether it is valid (no tie at the cutoff); invalid hints have zero parities.
    pub valid: bool,
    /// The parity (of the selected blocks and, for a main hint, the extra block).
    pub parity: Vec<u8>,
    /// For a backup hint, the parity of the blocks not selected.
    pub second: Option<Vec<u8>>,
}

/// A subset by the letter of SPEC.md: sort `v[j]`, take index `c / 2`.
struct DefinedSubset {
    values: Vec<u32>,
    cutoff: u32,
    valid: bool,
    extra: u64,
}

impl DefinedSubset {
    fn new(select_key: &Key, hint: u64, blocks: u64) -> Self {
        let values = select_values(select_key, hint, blocks);
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let half = (blocks / 2) as usize;
        let cutoff = sorted[half];
        let valid = sorted[half - 1] != cutoff;
        let unselected: Vec<u64> = (0..blocks)
            .filter(|&a| values[a as usize] >= cutoff)
            .collect();
        let extra = unselected[extra_rank(select_key, hint, blocks) as usize];
        Self {
            values,
            cutoff,
            valid,
            extra,
        }
    }

    fn selected(&self, block: u64) -> bool {
        self.values[block as usize] < self.cutoff
    }
}

/// Hints `hints` over blocks `blocks`, each computed from the definition with the CPU.
/// Costs, per hint, a sort of `c` values and, for Plinko, one forward iPRF evaluation per block
/// (plus building each block's iPRF once): meant for samples, not whole hint sets.
pub fn direct_hints(
    params: &Params,
    key: &MasterKey,
    db: &Database<'_>,
    blocks: Range<u64>,
    hints: &[u64],
) -> Result<Vec<HintValue>, Error> {
    db.check(params)?;
    params.check_block_range(&blocks)?;
    if let Some(&hint) = hints.iter().find(|&&j| j >= params.total_hints()) {
        return Err(Error::Parameter(format!(
            "hint {hint} does not exist: there are {}",
            params.total_hints()
        )));
    }
    let select_key = key.select_key(params.scheme());
    let subsets: Vec<DefinedSubset> = hints
        .par_iter()
        .map(|&j| DefinedSubset::new(&select_key, j, params.blocks()))
        .collect();
    let e = params.entry_size();
    let empty = || -> Vec<HintValue> {
        hints
            .iter()
            .zip(&subsets)
            .map(|(&hint, subset)| HintValue {
                hint,
                valid: subset.valid,
                parity: vec![0; e],
                second: (hint >= params.main_hints()).then(|| vec![0; e]),
            })
            .collect()
    };
    let one_block = |a: u64| -> Result<Vec<HintValue>, Error> {
        let mut values = empty();
        let iprf = match params.scheme() {
            Scheme::Plinko => Some(key.block_iprf(params, a)?),
            Scheme::Rms24 => None,
        };
        for (value, subset) in values.iter_mut().zip(&subsets) {
            if !subset.valid {
                continue;
            }
            let offset = match &iprf {
                Some(iprf) => iprf.forward(value.hint)?,
                None => rms24_offset_unchecked(&select_key, value.hint, a, params.block_size()),
            };
            let target = if subset.selected(a) {
                Some(&mut value.parity)
            } else if let Some(second) = value.second.as_mut() {
                Some(second)
            } else if a == subset.extra {
                Some(&mut value.parity)
            } else {
                None
            };
            if let Some(target) = target {
                xor_entry(target, db, params.block_size(), a, offset);
            }
        }
        Ok(values)
    };
    blocks
        .into_par_iter()
        .map(one_block)
        .try_reduce(empty, |mut acc, part| {
            for (a, p) in acc.iter_mut().zip(part) {
                a.parity
                    .iter_mut()
                    .zip(&p.parity)
                    .for_each(|(x, y)| *x ^= y);
                if let (Some(x), Some(y)) = (a.second.as_mut(), p.second.as_ref()) {
                    x.iter_mut().zip(y).for_each(|(x, y)| *x ^= y);
                }
            }
            Ok(acc)
        })
}
