// Saving the main plot: the SVG as it is on the page (its styles are inside it), or a PNG drawn
// from that SVG at twice its size.

import { SVGNS, SVG_STYLE } from './plot.js';

export function svgText(svg) {
  const [, , w, h] = svg.getAttribute('viewBox').split(/\s+/).map(Number);
  const clone = svg.cloneNode(true);
  clone.setAttribute('xmlns', SVGNS);
  clone.setAttribute('width', String(w));
  clone.setAttribute('height', String(h));
  clone.removeAttribute('style');
  clone.classList.remove('stale');
  const style = document.createElementNS(SVGNS, 'style');
  style.textContent = SVG_STYLE;
  clone.insertBefore(style, clone.firstChild);
  return `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(clone)}\n`;
}

export async function savePng(svg, name, scale = 2) {
  const [, , w, h] = svg.getAttribute('viewBox').split(/\s+/).map(Number);
  const url = URL.createObjectURL(new Blob([svgText(svg)], { type: 'image/svg+xml' }));
  try {
    const img = new Image();
    await new Promise((resolve, reject) => {
      img.onload = resolve;
      img.onerror = () => reject(new Error('the browser could not render the SVG'));
      img.src = url;
    });
    const c = document.createElement('canvas');
    c.width = Math.round(w * scale);
    c.height = Math.round(h * scale);
    const ctx = c.getContext('2d');
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, c.width, c.height);
    ctx.drawImage(img, 0, 0, c.width, c.height);
    const blob = await new Promise((resolve, reject) => c.toBlob((b) => (b ? resolve(b) : reject(new Error('toBlob failed'))), 'image/png'));
    download(blob, name);
  } finally {
    URL.revokeObjectURL(url);
  }
}

export function download(blob, name) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 5000);
}
