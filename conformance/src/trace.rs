//! Golden traces (to come).
