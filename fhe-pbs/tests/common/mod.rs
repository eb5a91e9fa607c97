//! Keys made by tfhe-rs 1.8 (a dev-dependency only) for a parameter set of this crate, and
//! the same keys as this crate's types, through their raw words.
#![allow(dead_code, clippy::unwrap_used)]

use fhe_pbs::{KeyswitchKey, Parameters};
use tfhe::core_crypto::prelude as tfhe_core;
use tfhe::core_crypto::prelude::{
    CiphertextModulus, DecompositionBaseLog, DecompositionLevelCount,
};

/// tfhe-rs's secret keys, key-switching key and bootstrap key, made by tfhe-rs for the test
/// set's shape.
pub struct TfheKeys {
    pub small: tfhe_core::LweSecretKeyOwned<u64>,
    pub glwe: tfhe_core::GlweSecretKeyOwned<u64>,
    pub ksk: tfhe_core::LweKeyswitchKeyOwned<u64>,
    pub bsk: tfhe_core::LweBootstrapKeyOwned<u64>,
    pub encryption: tfhe_core::EncryptionRandomGenerator<tfhe_core::DefaultRandomGenerator>,
}

pub fn tfhe_keys(params: &Parameters) -> TfheKeys {
    let mut seeder = tfhe_core::new_seeder();
    let seeder = seeder.as_mut();
    let mut secret =
        tfhe_core::SecretRandomGenerator::<tfhe_core::DefaultRandomGenerator>::new(seeder.seed());
    let mut encryption =
        tfhe_core::EncryptionRandomGenerator::<tfhe_core::DefaultRandomGenerator>::new(
            seeder.seed(),
            seeder,
        );
    let small = tfhe_core::allocate_and_generate_new_binary_lwe_secret_key(
        tfhe_core::LweDimension(params.lwe_dimension().0),
        &mut secret,
    );
    let glwe = tfhe_core::allocate_and_generate_new_binary_glwe_secret_key(
        tfhe_core::GlweDimension(params.glwe_dimension().0),
        tfhe_core::PolynomialSize(params.polynomial_size().0),
        &mut secret,
    );
    let ks = params.ks_decomposition();
    let pbs = params.pbs_decomposition();
    let ksk = tfhe_core::allocate_and_generate_new_lwe_keyswitch_key(
        &glwe.as_lwe_secret_key(),
        &small,
        DecompositionBaseLog(ks.base_log.0),
        DecompositionLevelCount(ks.level_count.0),
        tfhe_core::Gaussian::from_dispersion_parameter(tfhe_core::StandardDev(2f64.powi(-30)), 0.0),
        CiphertextModulus::new_native(),
        &mut encryption,
    );
    let bsk = tfhe_core::par_allocate_and_generate_new_lwe_bootstrap_key(
        &small,
        &glwe,
        DecompositionBaseLog(pbs.base_log.0),
        DecompositionLevelCount(pbs.level_count.0),
        tfhe_core::Gaussian::from_dispersion_parameter(tfhe_core::StandardDev(2f64.powi(-50)), 0.0),
        CiphertextModulus::new_native(),
        &mut encryption,
    );
    TfheKeys {
        small,
        glwe,
        ksk,
        bsk,
        encryption,
    }
}

/// The same keys as this crate's types, through the raw words (the layouts are tfhe-rs's).
pub fn our_keys(
    params: Parameters,
    keys: &TfheKeys,
) -> (fhe_pbs::ClientKey, fhe_pbs::EvaluationKeys) {
    let client = fhe_pbs::ClientKey::from_parts(
        params,
        fhe_pbs::LweSecretKey::from_bits(keys.small.as_ref().to_vec()).unwrap(),
        fhe_pbs::GlweSecretKey::from_bits(
            keys.glwe.as_ref().to_vec(),
            params.glwe_dimension(),
            params.polynomial_size(),
        )
        .unwrap(),
    )
    .unwrap();
    let bsk = fhe_pbs::BootstrapKey::from_vec(
        keys.bsk.as_ref().to_vec(),
        params.lwe_dimension(),
        params.glwe_dimension(),
        params.polynomial_size(),
        params.pbs_decomposition(),
    )
    .unwrap();
    let ksk = KeyswitchKey::from_vec(
        keys.ksk.as_ref().to_vec(),
        params.big_lwe_dimension(),
        params.lwe_dimension(),
        params.ks_decomposition(),
    )
    .unwrap();
    let evaluation = fhe_pbs::EvaluationKeys::from_parts(params, bsk, ksk).unwrap();
    (client, evaluation)
}
