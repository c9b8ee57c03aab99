B
conv1.biasJֻp¦½'C>רx<יqִ=R¿¾=בתװ=