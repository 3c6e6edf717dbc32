"""What the lessons build by hand to teach: attention written out, scaling,
recurrence, a tiny transformer trained with different head counts."""
