# scrapyd-deploy and `shub deploy` build the project's egg with `python setup.py bdist_egg`; everything else
# (packages, the `scrapy` settings entry point, migrations as package data) is declared in pyproject.toml.
from setuptools import setup

setup()
