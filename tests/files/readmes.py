# ruff: noqa: E501  (the files keep their own long lines)
"""README files as projects write them: navigation hubs (a docs index, an awesome list) and READMEs with prose.

NODE_API_ASSETS and GYP_DOCS are real files, copied as published (Node.js doc/api_assets/README.md, MIT;
gyp-next docs/README.md, BSD-3-Clause, as shipped in npm's node-gyp). The others are written the way such
files are written, with real projects and addresses.
"""

from __future__ import annotations

# Node.js, doc/api_assets/README.md: an index of the folder's files, one link each.
NODE_API_ASSETS = """\
# API documentation assets

* [`api.js`](./api.js): This file contains all the JavaScript used throughout the documentation.
* [`hljs.css`](./hljs.css): This CSS file is used for syntax highlighting styles in code blocks.
* [`js-flavor-cjs.svg`](./js-flavor-cjs.svg): This SVG image represents the toggle between ESM and CJS (_CJS_)
* [`js-flavor-esm.svg`](./js-flavor-esm.svg): This SVG image represents the toggle between ESM and CJS (_ESM_)
* [`style.css`](./style.css): This CSS file contains the styling rules for the overall appearance of the API documentation.
"""

# gyp-next, docs/README.md: six links, then what GYP is: prose, kept.
GYP_DOCS = """\
# Generate Your Projects (gyp-next)

GYP is a Meta-Build system: a build system that generates other build systems.

* [User documentation](./UserDocumentation.md)
* [Input Format Reference](./InputFormatReference.md)
* [Language specification](./LanguageSpecification.md)
* [Hacking](./Hacking.md)
* [Testing](./Testing.md)
* [GYP vs. CMake](./GypVsCMake.md)

GYP is intended to support large projects that need to be built on multiple
platforms (e.g., Mac, Windows, Linux), and where it is important that
the project can be built using the IDEs that are popular on each platform
as if the project is a "native" one.

It can be used to generate XCode projects, Visual Studio projects, Ninja
build files, and Makefiles. In each case GYP's goal is to replicate as
closely as possible the way one would set up a native build of the project
using the IDE.

GYP can also be used to generate "hybrid" projects that provide the IDE
scaffolding for a nice user experience but call out to Ninja to do the actual
building (which is usually much faster than the native build systems of the
IDEs).

For more information on GYP, click on the links above.
"""

# A handbook's docs/README.md: headings and one link per page.
DOCS_INDEX = """\
# Staff handbook

## Getting started

- [First day](first-day.md)
- [Accounts and passwords](accounts.md)
- [Who to ask](contacts.md)

## Customers

- [Returns](customers/returns.md) — refunds and exchanges
- [Delivery](customers/delivery.md) — carriers and delivery times
- [Complaints](customers/complaints.md)

## Office

- [Canteen](office/canteen.html)
- [Travel and expenses](office/travel.md)
- [Holidays](office/holidays.md)

See also the [changelog](CHANGELOG.md).
"""

# An awesome list: badge, a contents list, entries of a link and a one-line description.
AWESOME_LIST = """\
# Awesome Django [![Awesome](https://awesome.re/badge.svg)](https://awesome.re)

A curated list of awesome things related to Django.

## Contents

- [Admin interface](#admin-interface)
- [Authentication](#authentication)
- [Search](#search)
- [Task queues](#task-queues)

## Admin interface

- [django-grappelli](https://github.com/sehmaschine/django-grappelli) - A jazzy skin for the Django admin interface.
- [django-jazzmin](https://github.com/farridav/django-jazzmin) - Drop-in theme for the Django admin.
- [django-import-export](https://github.com/django-import-export/django-import-export) - Import and export data with included admin integration.

## Authentication

- [django-allauth](https://github.com/pennersr/django-allauth) - Authentication, registration and account management, including social accounts.
- [django-otp](https://github.com/django-otp/django-otp) - Pluggable framework for adding two-factor authentication.

## Search

- [django-haystack](https://github.com/django-haystack/django-haystack) - Modular search for Django.
- [django-watson](https://github.com/etianen/django-watson) - Full-text multi-table search application for Django using SQL database features.

## Task queues

- [django-q2](https://github.com/django-q2/django-q2) - A multiprocessing distributed task queue for Django.
- [celery](https://github.com/celery/celery) - Distributed task queue.

## Contributing

Contributions welcome! Read the [contribution guidelines](CONTRIBUTING.md) first.
"""

# A project README: what it is, how to install and use it (prose and commands), a few links.
PROJECT_README = """\
# parcelkit

[![CI](https://github.com/example/parcelkit/actions/workflows/ci.yml/badge.svg)](https://github.com/example/parcelkit/actions)

parcelkit computes shipping costs for parcels sent from our warehouse. It knows the carriers we
work with, their weight bands and the surcharges for remote postcodes, and it prints a label that
the warehouse scanner reads.

## Installation

parcelkit needs Python 3.11 or later. Install it into a virtual environment with pip:

```sh
python -m venv .venv
.venv/bin/pip install parcelkit
```

The carrier tables are read from `/etc/parcelkit/carriers.toml`; copy the example file there and
fill in the account numbers the carriers gave us before the first run.

## Usage

Run `parcelkit quote --weight 2.5 --postcode 1000` to get a price from every carrier, cheapest first.
Parcels heavier than thirty kilograms are refused: they travel by freight and need a booking.

## Documentation

See the [user guide](docs/guide.md) and the [changelog](CHANGELOG.md).
"""
