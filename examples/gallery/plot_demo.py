"""
The demo: LSTM-CS, SOMP and OMP on image blocks
===============================================

placeholder
"""

import matplotlib.pyplot as plt
import numpy as np

fig, ax = plt.subplots()
ax.plot(np.arange(10))
plt.show()
