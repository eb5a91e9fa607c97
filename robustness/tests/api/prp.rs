//! `prp` under extreme values, many threads and GPU faults.
