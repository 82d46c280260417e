"""tensorgrad: a small tensor autograd framework on NumPy."""
