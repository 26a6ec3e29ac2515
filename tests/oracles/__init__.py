"""NumPy test oracles: plain, slow re-statements of compiled kernels that tests
compare them with (:mod:`.reference`: LSTM-CS and BLSTM-CS, Algorithm 2;
:mod:`.reference_beam`: the beam-search rescue).  Not part of the package."""
