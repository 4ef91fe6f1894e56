"""pnm.py - the header of a binary Netpbm file (P5/P6), for the Python parts
of the CLI tests (raw16.py, batch_gpu.sh): read(path) gives the four header
fields (magic, width, height, maxval, as bytes) and the samples after them."""


def read(path):
    data = open(path, "rb").read()
    # each field follows whitespace and ends at one; one whitespace byte ends
    # the header
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos : pos + 1].isspace():
            pos += 1
        start = pos
        while not data[pos : pos + 1].isspace():
            pos += 1
        fields.append(data[start:pos])
    return fields, data[pos + 1 :]
