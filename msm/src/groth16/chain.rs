//! [`SquareChain`]: a circuit of any number of constraints, for examples, tests and benches.

use ark_ff::PrimeField;
use ark_relations::r1cs::{
    ConstraintSynthesizer, ConstraintSystemRef, LinearCombination, SynthesisError, Variable,
};

/// The chain `x_{i+1} = x_i^2 + x_i + c` for `i = 0 .. steps`: one R1CS constraint per step,
/// `x_i * (x_i + 1) = x_{i+1} - c`, from a private start `x_0`.
///
/// The last `public_inputs` values of the chain (at most `steps`) are public inputs, in chain
/// order (so [`SquareChain::public_values`] is what the verifier takes); the rest are private.
/// A chain of `2^k` steps has `2^k` constraints, so a QAP domain of `2^(k+1)` points (the
/// domain also holds one point per instance variable).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SquareChain<F> {
    /// `x_0`; `None` for the key's setup, which needs only the shape.
    pub start: Option<F>,
    /// The constant `c`.
    pub constant: F,
    /// Constraints: steps of the chain.
    pub steps: usize,
    /// How many of the chain's last values are public inputs (capped at `steps`).
    pub public_inputs: usize,
}

impl<F: PrimeField> SquareChain<F> {
    /// The chain from `start`, with the last `public_inputs` values public.
    pub fn new(start: F, constant: F, steps: usize, public_inputs: usize) -> Self {
        Self {
            start: Some(start),
            constant,
            steps,
            public_inputs,
        }
    }

    /// The same shape without its start: what a setup takes.
    pub fn without_witness(&self) -> Self {
        Self {
            start: None,
            ..*self
        }
    }

    /// The public inputs, in the order of the circuit's instance variables (empty without a
    /// start).
    pub fn public_values(&self) -> Vec<F> {
        let Some(mut x) = self.start else {
            return Vec::new();
        };
        let first_public = self.steps - self.public_inputs.min(self.steps);
        let mut public = Vec::new();
        for step in 0..self.steps {
            x = x.square() + x + self.constant;
            if step >= first_public {
                public.push(x);
            }
        }
        public
    }
}

impl<F: PrimeField> ConstraintSynthesizer<F> for SquareChain<F> {
    fn generate_constraints(self, cs: ConstraintSystemRef<F>) -> Result<(), SynthesisError> {
        let first_public = self.steps - self.public_inputs.min(self.steps);
        let mut value = self.start;
        let mut x = cs.new_witness_variable(|| value.ok_or(SynthesisError::AssignmentMissing))?;
        for step in 0..self.steps {
            let next_value = value.map(|x| x.square() + x + self.constant);
            let assigned = || next_value.ok_or(SynthesisError::AssignmentMissing);
            let next = if step >= first_public {
                cs.new_input_variable(assigned)?
            } else {
                cs.new_witness_variable(assigned)?
            };
            let one = Variable::One;
            cs.enforce_constraint(
                LinearCombination::from(x),
                LinearCombination::from(x) + (F::one(), one),
                LinearCombination::from(next) - (self.constant, one),
            )?;
            (x, value) = (next, next_value);
        }
        Ok(())
    }
}
