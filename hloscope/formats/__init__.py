"""The files hloscope writes, one module per format: its names, schema, typed reader and writer.

    build.py           a `hloscope build` folder: manifest.json (hloscope/build-manifest/v1),
                       dump/, optimized_hlo.txt, memory/cost analysis JSON, compile.log
    compile_record.py  what one compile produced (the manifest's and capture.json's "compile")
    sweep.py           a `hloscope sweep -o DIR` folder: sweep.json (hloscope/sweep/v1), builds/
    frontier.py        a `sweep --search frontier -o DIR` folder's frontier.json
                       (hloscope/frontier/v1)
    snapshot.py        a `hloscope snapshot` baseline (hloscope/snapshot/v1)
    capture.py         the folder `from_jax` compiles into: capture.json (hloscope/capture/v1)
    profile.py         a `hloscope profile` folder: profile.json (hloscope/profile-manifest/v1)
    json_text.py       how every one of them is turned into JSON text

No other module of hloscope spells these file names: the loader finds them through here, the
workloads write them through here. Readers are strict where a user names the file (a baseline,
a sweep folder: errors with exit codes) and lenient where a file is only discovered beside an
input (None when absent or not of the schema).
"""
