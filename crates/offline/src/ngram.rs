//! Interpolated Kneser-Ney n-gram language model over analyzer tokens.
