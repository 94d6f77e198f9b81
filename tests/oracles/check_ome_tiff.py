#!/usr/bin/python3
"""Independent check of an OME-TIFF written by tilewave, with tifffile and
xml.etree.

usage: check_ome_tiff.py FILE.ome.tif [--generic FILE.tif] [--raw] [--xml-out FILE]

Prints one JSON object: whether tifffile calls it OME and BigTIFF, its
series (name, shape, dtype, axes, the shapes of its levels, the tile size,
compression and NewSubfileType of each level), and what the OME-XML says
(Pixels attributes, channel names and samples, TiffData). With --generic,
every level of series 0 is compared with the same level of a generic
pyramidal TIFF (the pages that are tiled): pixels (deflate/none: tifffile
decodes them without imagecodecs), or with --raw the compressed tiles and
JPEG tables byte for byte. --xml-out writes the OME-XML to FILE (for
xmllint). Exit 1 with a message on any structural problem.
"""
import json
import sys
import xml.etree.ElementTree as ET

import numpy as np
import tifffile

NS = '{http://www.openmicroscopy.org/Schemas/OME/2016-06}'


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def raw_tiles(page, fh):
    out = []
    for off, n in zip(page.dataoffsets, page.databytecounts):
        fh.seek(off)
        out.append(fh.read(n))
    return out, page.jpegtables


def first_diff(a, b):
    d = np.argwhere(a != b)
    return {'at': d[0].tolist(), 'ours': a[tuple(d[0])].item(), 'generic': b[tuple(d[0])].item(),
            'count': int(len(d))}


def main():
    args = sys.argv[1:]
    path = args[0]
    generic = args[args.index('--generic') + 1] if '--generic' in args else None
    xml_out = args[args.index('--xml-out') + 1] if '--xml-out' in args else None
    out = {}
    with tifffile.TiffFile(path) as tif:
        out['is_ome'] = tif.is_ome
        out['is_bigtiff'] = tif.is_bigtiff
        out['pages'] = len(tif.pages)
        xml = tif.pages[0].description
        if xml_out:
            with open(xml_out, 'w', encoding='utf-8') as f:
                f.write(xml)
        out['series'] = []
        for s in tif.series:
            levels = []
            for lv in s.levels:
                kf = lv.keyframe
                levels.append({'shape': list(lv.shape), 'tile': [kf.tilelength, kf.tilewidth],
                               'compression': int(kf.compression), 'subfiletype': int(kf.subfiletype),
                               'photometric': int(kf.photometric), 'samples': int(kf.samplesperpixel)})
            out['series'].append({'name': s.name, 'shape': list(s.shape), 'dtype': str(s.dtype),
                                  'axes': s.axes, 'kind': s.kind, 'levels': levels})
        root = ET.fromstring(xml.encode('utf-8'))
        images = []
        for im in root.findall(NS + 'Image'):
            px = im.find(NS + 'Pixels')
            desc = im.find(NS + 'Description')
            images.append({
                'name': im.get('Name'),
                'description': desc.text if desc is not None else None,
                'pixels': dict(px.attrib),
                'channels': [dict(c.attrib) for c in px.findall(NS + 'Channel')],
                'tiffdata': [dict(t.attrib) for t in px.findall(NS + 'TiffData')],
            })
        out['images'] = images
        if generic:
            with tifffile.TiffFile(generic) as g:
                gl = [p for p in g.pages if p.is_tiled]
                s = tif.series[0]
                if len(gl) != len(s.levels):
                    fail(f'{len(s.levels)} levels, the generic TIFF has {len(gl)}')
                diffs = []
                for k, (lv, gp) in enumerate(zip(s.levels, gl)):
                    if '--raw' in args:
                        pages = [p for p in lv.pages]
                        if len(pages) != 1:
                            fail('--raw compares single-plane files only')
                        if raw_tiles(pages[0], tif.filehandle) != \
                                raw_tiles(gp, g.filehandle):
                            diffs.append({'level': k, 'raw': 'differ'})
                        continue
                    a = lv.asarray()
                    b = gp.asarray()
                    if lv.axes.startswith('C'):
                        a = np.moveaxis(a, 0, -1)
                    if b.ndim == 2 and a.ndim == 3 and a.shape[-1] == 1:
                        a = a[..., 0]
                    if a.shape != b.shape or a.dtype != b.dtype:
                        diffs.append({'level': k, 'shape': [list(a.shape), list(b.shape)],
                                      'dtype': [str(a.dtype), str(b.dtype)]})
                    elif not np.array_equal(a, b):
                        diffs.append({'level': k, **first_diff(a, b)})
                out['generic_levels'] = len(gl)
                out['diffs'] = diffs
    print(json.dumps(out, indent=1))


if __name__ == '__main__':
    main()
