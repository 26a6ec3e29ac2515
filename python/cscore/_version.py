"""The version of cscore and the name it is installed under (one place for both).

``cscore.__version__`` reads :data:`__version__`; ``pyproject.toml`` takes the
package version from this file too (scikit-build-core's regex metadata provider),
so the installed distribution's metadata and ``cscore.__version__`` always agree.

The import name is ``cscore``, the distribution name :data:`DISTRIBUTION`: the
name ``cscore`` on the package index belongs to an unrelated project, so every
install hint names ``cscore-decoders`` (as PyWavelets installs ``pywt`` and
scikit-learn ``sklearn``).
"""

__version__ = "0.1.0"

#: the name to ``pip install`` (``pip install "cscore-decoders[train]"``)
DISTRIBUTION = "cscore-decoders"
