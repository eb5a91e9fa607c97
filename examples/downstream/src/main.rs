//! The README's "Using one crate" example, run as a project of its own would run it, with
//! checks: prints one line per check and `downstream: all checks passed` at the end.

use prp::{Backend, ChaCha8, Evaluator, Iprf, Key, Keystream, Permutation, SometimesRecurse};

fn main() -> Result<(), prp::Error> {
    // The README's first snippet.
    let stream = ChaCha8::new(Key::new(&[42; 32]), [0, 0, 0]);
    let backend = Backend::best(); // CUDA if a GPU is usable, else the CPU (and it says why)
    let mut keystream = vec![0u8; 1 << 20];
    backend.fill_keystream(&stream, 0, &mut keystream)?;

    println!("backend: {}", backend.name());
    println!("cuda compiled in: {}", cfg!(feature = "cuda"));
    let last = stream.block((1 << 20) / 64 - 1);
    let last_bytes: Vec<u8> = last.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(keystream[(1 << 20) - 64..], last_bytes[..]);
    println!(
        "keystream: 1 MiB, first bytes {:02x?}, last block as ChaCha8::block says",
        &keystream[..8]
    );

    // The README's second snippet.
    let prp = SometimesRecurse::new(Key::new(&[7; 32]), 1 << 20)?; // lambda = 128, ChaCha8
    let y = prp.forward(12345)?; // one value, on the CPU
    let inverse = Backend::best().inverse_table(&prp)?; // P^-1 of all 2^20 values
    let iprf = Iprf::new(Key::new(&[9; 32]), 1 << 20, 1 << 10)?; // F: [0, 2^20) -> [0, 2^10)
    let preimages = iprf.preimages(iprf.forward(5)?)?; // contains 5

    assert_eq!(inverse[y as usize], 12345);
    assert_eq!(prp.inverse(y)?, 12345);
    println!(
        "SometimesRecurse over 2^20: P(12345) = {y}, P^-1(P(12345)) = 12345 (value and table)"
    );
    assert!(preimages.contains(&5));
    println!(
        "Iprf [0, 2^20) -> [0, 2^10): F(5) = {}, {} preimages, 5 among them",
        iprf.forward(5)?,
        preimages.len()
    );

    // Without the default feature `cuda` the crate has no CUDA backend at all.
    #[cfg(feature = "cuda")]
    let _ = prp::Cuda::new;
    println!("downstream: all checks passed");
    Ok(())
}
