"""The conformance suite's oracle: exact goldens, independent of the reference interpreter.

Every executing case's generator gives a model of what its kernel computes
(`conformance.gen`), written from the case's description with the pieces here: the exact
value of every elementwise op (`scalar`, `transcendental`: fractions, and mpmath at 256 bits
for the functions that are not rational), rounding once into each float format (`formats`),
exact sums of products (`sums`), the accepted interval of each tolerance class (`expect`), and
float64 models with proven error bounds for the whole kernels of the `full` level
(`kernels`). Nothing here imports `reference_interp`: the interpreter is judged by the suite
like any other implementation.
"""
