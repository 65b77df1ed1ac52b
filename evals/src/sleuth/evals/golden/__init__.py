"""Golden dataset builder: sampling, generation, review, frozen split manifest."""
